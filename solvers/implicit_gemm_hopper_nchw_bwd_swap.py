"""Hopper implicit GEMM backward data with swapped operands on NCHW tensors, for narrow layers at stride 1: dy (and a
filter of more than one tap) copied channels-last, the NHWC swapped-operand backward data (ConvImplicitGemmHopperBwdSwap:
its filter rewrite, then the swapped forward kernel) run on the copies, dx transposed back
(implicit_gemm_hopper_nchw.py). FP16/BF16, dx of at most 128 channels, dy's a multiple of 64."""

from __future__ import annotations

from miofind.env import hopper_swap_nchw

from .implicit_gemm_hopper_bwd_swap import ImplicitGemmHopperBwdSwap
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperBwdSwapNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperBwdSwapNchw"
    version = 1
    inner_class = ImplicitGemmHopperBwdSwap
    algorithm = ImplicitGemmHopperBwdSwap.algorithm
    directions = ImplicitGemmHopperBwdSwap.directions
    dtypes = ImplicitGemmHopperBwdSwap.dtypes
    switch = (hopper_swap_nchw, "MIOFIND_HOPPER_SWAP_NCHW")
