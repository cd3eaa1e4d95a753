"""Hopper implicit GEMM backward weights on NCHW tensors: dy and x copied channels-last, the NHWC backward
weights (ConvImplicitGemmHopperWrw) run on the copies, dw (KYXC) transposed back to KCYX where the filter has more
than one tap (implicit_gemm_hopper_nchw.py). FP16/BF16."""

from __future__ import annotations

from .implicit_gemm_hopper_wrw import ImplicitGemmHopperWrw
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperWrwNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperWrwNchw"
    version = 1
    inner_class = ImplicitGemmHopperWrw
    algorithm = ImplicitGemmHopperWrw.algorithm
    directions = ImplicitGemmHopperWrw.directions
    dtypes = ImplicitGemmHopperWrw.dtypes
