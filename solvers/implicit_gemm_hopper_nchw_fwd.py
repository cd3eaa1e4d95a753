"""Hopper implicit GEMM forward on NCHW tensors: x (and a filter of more than one tap) copied channels-last, the
NHWC forward (ConvImplicitGemmHopperFwd) run on the copies, y transposed back (implicit_gemm_hopper_nchw.py).
FP16/BF16; TF32 as the NHWC solver offers it."""

from __future__ import annotations

from .implicit_gemm_hopper_fwd import ImplicitGemmHopperFwd
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperFwdNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperFwdNchw"
    version = 1
    inner_class = ImplicitGemmHopperFwd
    algorithm = ImplicitGemmHopperFwd.algorithm
    directions = ImplicitGemmHopperFwd.directions
    dtypes = ImplicitGemmHopperFwd.dtypes
