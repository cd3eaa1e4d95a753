"""Hopper implicit GEMM backward data with TF32 math, operands rounded to nearest, on NCHW tensors: dy (and a
filter of more than one tap) copied channels-last, ConvImplicitGemmHopperBwdTf32Rn run on the copies (stride 1), dx
transposed back (implicit_gemm_hopper_nchw.py). FP32 data, math="tf32"."""

from __future__ import annotations

from .implicit_gemm_hopper_bwd_tf32_rn import ImplicitGemmHopperBwdTf32Rn
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperBwdTf32RnNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperBwdTf32RnNchw"
    version = 1
    inner_class = ImplicitGemmHopperBwdTf32Rn
    algorithm = ImplicitGemmHopperBwdTf32Rn.algorithm
    directions = ImplicitGemmHopperBwdTf32Rn.directions
    dtypes = ImplicitGemmHopperBwdTf32Rn.dtypes
