"""Hopper implicit GEMM, forward (kernels_src/implicit_gemm_hopper_fwd.cu): M = N*Ho*Wo output pixels,
N = K, K = Y*X*C, x gathered on the fly; wgmma (sm_90a), FP16/BF16, NHWC."""

from __future__ import annotations

from .implicit_gemm_hopper_base import ImplicitGemmHopperBase


class ImplicitGemmHopperFwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwd"
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"
