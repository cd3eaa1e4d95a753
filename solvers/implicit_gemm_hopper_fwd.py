"""Hopper implicit GEMM, forward (kernels_src/implicit_gemm_hopper_fwd.cu): M = N*Ho*Wo output pixels,
N = K, K = Y*X*C, x gathered on the fly; wgmma (sm_90a), FP16/BF16, and FP32 data with TF32 math
(math="tf32": m64nNk8 TF32 wgmma, 32-deep K tiles, FP32 output), NHWC. Small grids split the K
reduction over grid.y (FP32 partials in the workspace, summed by igemm_hopper_fwd_reduce)."""

from __future__ import annotations

from .implicit_gemm_hopper_base import ImplicitGemmHopperBase, tf32_off


class ImplicitGemmHopperFwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwd"
    version = 5                 # 2: split-K (SPLITK tunable, partial planes in the workspace, reduce kernel); 3: WSPEC; 4: the reduce as a programmatic dependent launch; 5: TF32
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    dtypes = frozenset({"FP16", "BF16", "FP32"})
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        off = tf32_off(problem.as_conv())        # an Applicability: falsy when not applicable
        return base if off is None else off
