"""Hopper implicit GEMM backward data on NCHW tensors: dy (and a filter of more than one tap) copied
channels-last, the NHWC stride-phase backward data (ConvImplicitGemmHopperBwd) run on the copies, dx transposed back
(implicit_gemm_hopper_nchw.py). FP16/BF16."""

from __future__ import annotations

from .implicit_gemm_hopper_bwd import ImplicitGemmHopperBwd
from .implicit_gemm_hopper_nchw import ChannelsFirstHopper


class ImplicitGemmHopperBwdNchw(ChannelsFirstHopper):
    id = "ConvImplicitGemmHopperBwdNchw"
    version = 1
    inner_class = ImplicitGemmHopperBwd
    algorithm = ImplicitGemmHopperBwd.algorithm
    directions = ImplicitGemmHopperBwd.directions
    dtypes = ImplicitGemmHopperBwd.dtypes
