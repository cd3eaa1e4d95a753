"""Hopper implicit GEMM backward weights with TF32 math, operands rounded to nearest, on NCHW tensors: dy and x copied
channels-last, ConvImplicitGemmHopperWrwTf32Rn run on the copies, dw (KYXC) transposed back to KCYX where the filter has
more than one tap (implicit_gemm_hopper_nchw.py). FP32 data, math="tf32"."""

from __future__ import annotations

from .implicit_gemm_hopper_nchw import ChannelsFirstHopper
from .implicit_gemm_hopper_wrw_tf32_rn import ImplicitGemmHopperWrwTf32Rn


class ImplicitGemmHopperWrwTf32RnNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperWrwTf32RnNchw"
    version = 1
    inner_class = ImplicitGemmHopperWrwTf32Rn
    algorithm = ImplicitGemmHopperWrwTf32Rn.algorithm
    directions = ImplicitGemmHopperWrwTf32Rn.directions
    dtypes = ImplicitGemmHopperWrwTf32Rn.dtypes
