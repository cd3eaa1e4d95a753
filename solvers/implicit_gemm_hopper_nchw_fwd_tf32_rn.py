"""Hopper implicit GEMM forward with TF32 math, operands rounded to nearest, on NCHW tensors: x (and a filter of
more than one tap) copied channels-last, ConvImplicitGemmHopperFwdTf32Rn run on the copies, y transposed back
(implicit_gemm_hopper_nchw.py). FP32 data, math="tf32"."""

from __future__ import annotations

from .implicit_gemm_hopper_fwd_tf32_rn import ImplicitGemmHopperFwdTf32Rn
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperFwdTf32RnNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperFwdTf32RnNchw"
    version = 1
    inner_class = ImplicitGemmHopperFwdTf32Rn
    algorithm = ImplicitGemmHopperFwdTf32Rn.algorithm
    directions = ImplicitGemmHopperFwdTf32Rn.directions
    dtypes = ImplicitGemmHopperFwdTf32Rn.dtypes
