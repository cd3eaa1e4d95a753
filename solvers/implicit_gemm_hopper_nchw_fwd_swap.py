"""Hopper implicit GEMM forward with swapped operands on NCHW tensors, for narrow layers: x (and a filter of more than one
tap) copied channels-last, the NHWC swapped-operand forward (ConvImplicitGemmHopperFwdSwap) run on the copies, y
transposed back (implicit_gemm_hopper_nchw.py). FP16/BF16, at most 128 output channels, input channels a multiple of 64."""

from __future__ import annotations

from miofind.env import hopper_swap_nchw

from .implicit_gemm_hopper_fwd_swap import ImplicitGemmHopperFwdSwap
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperFwdSwapNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperFwdSwapNchw"
    version = 1
    inner_class = ImplicitGemmHopperFwdSwap
    algorithm = ImplicitGemmHopperFwdSwap.algorithm
    directions = ImplicitGemmHopperFwdSwap.directions
    dtypes = ImplicitGemmHopperFwdSwap.dtypes
    switch = (hopper_swap_nchw, "MIOFIND_HOPPER_SWAP_NCHW")
