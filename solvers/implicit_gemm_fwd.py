"""Implicit GEMM convolution, forward (kernels_src/implicit_gemm_fwd.cu): M = N*Do*Ho*Wo output pixels,
N = K/G, K = C/G*Z*Y*X, x gathered on the fly. Every layout pair, FP32/FP16/BF16/TF32, 2D and 3D."""

from __future__ import annotations

from .implicit_gemm_base import ImplicitGemmBase


class ImplicitGemmFwd(ImplicitGemmBase):
    id = "ConvImplicitGemmFwd"
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_fwd.cu"
    kernel_name = "igemm_fwd"
