"""Implicit GEMM convolution, backward data (kernels_src/implicit_gemm_bwd.cu): M = N*Di*Hi*Wi input pixels,
N = C/G, K = K/G*Z*Y*X, dy gathered on the fly with a predicated gather for strides > 1."""

from __future__ import annotations

from .implicit_gemm_base import ImplicitGemmBase


class ImplicitGemmBwd(ImplicitGemmBase):
    id = "ConvImplicitGemmBwd"
    algorithm = "miopenConvolutionBwdDataAlgoImplicitGEMM"
    directions = frozenset("B")
    source = "implicit_gemm_bwd.cu"
    kernel_name = "igemm_bwd"
