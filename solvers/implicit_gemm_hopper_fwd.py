"""Hopper implicit GEMM, forward (kernels_src/implicit_gemm_hopper_fwd.cu): M = N*Ho*Wo output pixels,
N = K, K = Y*X*C, x gathered on the fly; wgmma (sm_90a), FP16/BF16, NHWC. Small grids split the K
reduction over grid.y (FP32 partials in the workspace, summed by igemm_hopper_fwd_reduce)."""

from __future__ import annotations

from .implicit_gemm_hopper_base import ImplicitGemmHopperBase


class ImplicitGemmHopperFwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwd"
    version = 4                 # 2: split-K (SPLITK tunable, partial planes in the workspace, reduce kernel); 3: WSPEC; 4: the reduce as a programmatic dependent launch
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"
