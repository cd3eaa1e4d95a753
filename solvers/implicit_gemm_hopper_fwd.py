"""Hopper implicit GEMM, forward (kernels_src/implicit_gemm_hopper_fwd.cu): M = N*Ho*Wo output pixels,
N = K, K = Y*X*C, x gathered on the fly; wgmma (sm_90a), FP16/BF16, NHWC. Small grids split the K
reduction over grid.y (FP32 partials in the workspace, summed by igemm_hopper_fwd_reduce)."""

from __future__ import annotations

from .implicit_gemm_hopper_base import ImplicitGemmHopperBase

# Persistent copy-engine tiles (BM, BN, WGS, STAGES) a find measures beside the default: the three that, with the
# default, came closest to the best of every persistent config on 35 ResNet-50 and non-ResNet FP16 layers at N = 32,
# the three chosen on the other 34 layers for each one held out (the same three for 34 of 35): 0.950 of cuDNN's best
# plan, against 1.037 for the default alone and 0.942 for the best of the 12 (bench/results/session-epi/call1/, fit/)
ALTERNATE_TILES = ((64, 128, 1, 8), (128, 128, 2, 4), (256, 64, 2, 4))


class ImplicitGemmHopperFwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwd"
    version = 4                 # 2: split-K (SPLITK tunable, partial planes in the workspace, reduce kernel); 3: WSPEC; 4: the reduce as a programmatic dependent launch
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"
    # a find measures the default at once and the alternates later (in the background where it may leave work there)
    configs_now = 1

    def find_configs(self, problem, limit: int | None = None) -> list:
        """The default config (None), then, where the default is a persistent copy-engine config, the
        ALTERNATE_TILES persistent copy-engine configs that are valid and not the default."""
        if limit is not None and limit <= 1:
            return [None]
        p = problem.as_conv()
        if not self.applicability(p):
            return [None]
        d = self.default_config(p)
        out = [None]
        if d["PERSIST"] and d["TMA"]:
            for bm, bn, wgs, st in ALTERNATE_TILES:
                c = dict(d, BM=bm, BN=bn, WGS=wgs, STAGES=st)
                if c != d and c not in out and self.is_valid_config(p, c):
                    out.append(c)
        return out[:limit]
