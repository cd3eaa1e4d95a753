"""Hopper implicit GEMM, backward data with TF32 math (FP32 data, math="tf32"): ConvImplicitGemmHopperBwd's stride
phases, each a forward convolution of dy run by the forward kernel's TF32 build. TF32 wgmma reads K-major operands only,
so w cannot be read in place as the 16-bit phases read it (MN-major): a first kernel
(kernels_src/implicit_gemm_hopper_flip.cu) rewrites it in the workspace, after the split's partial planes, as every
phase's dense filter (its view's KYXC: dx's channels out, dy's in, taps reversed), and each phase reads its own as a
forward does (a tiled tensor map with the copy engine). Same tiles, tunables, default rule and find alternates (the TF32
ones) as the 16-bit solver; NHWC, groups = 1, C and K multiples of 4."""

from __future__ import annotations

import math

from miofind import tma
from miofind.problem import ProblemDescription
from miofind.solver import KernelInfo, ceil_div

from .implicit_gemm_hopper_base import WS_ALIGN, kdepth, tf32_off
from .implicit_gemm_hopper_bwd import FLIP_SRC, ImplicitGemmHopperBwd, Phase, flip_kernel, flipped_bytes

ZERO_SRC_TF32 = "implicit_gemm_hopper_bwd_tf32.cu"


def phase_filter_offsets(p: ProblemDescription) -> dict[tuple[int, int], int]:
    """Element offset of each stride phase's rewritten filter, by its first tap (r0, s0): the phases in row-major
    order, each taps x C x K elements (the flip kernel's ``phase_offset``)."""
    (sh, sw), (fy, fx) = p.strides, p.filter_size
    out, off = {}, 0
    for r0 in range(sh):
        for s0 in range(sw):
            out[(r0, s0)] = off
            off += ceil_div(fy - r0, sh) * ceil_div(fx - s0, sw) * p.c * p.k
    return out


class ImplicitGemmHopperBwdTf32(ImplicitGemmHopperBwd):
    id = "ConvImplicitGemmHopperBwdTf32"
    version = 1
    dtypes = frozenset({"FP32"})
    zero_source, zero_name = ZERO_SRC_TF32, "igemm_hopper_bwd_tf32_zero"

    @property
    def kernel_files(self):
        return (*super().kernel_files, ZERO_SRC_TF32, FLIP_SRC)

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        off = tf32_off(problem.as_conv())        # an Applicability: falsy when not applicable
        return base if off is None else off

    def flip_kernel(self, p: ProblemDescription) -> KernelInfo:
        return flip_kernel(p)

    def phase_filter(self, p: ProblemDescription, ph: Phase, cfg) -> tuple[int, tma.TiledSpec]:
        """The phase's rewritten filter: its byte offset after the partial planes' end, and its tiled map (its view's
        dense KYXC: GEMM K = taps x dy's channels rows per dx channel, boxes of a K tile x BN)."""
        rows = math.prod(ph.taps) * p.k
        return (phase_filter_offsets(p)[(ph.r0, ph.s0)] * 4,
                tma.TiledSpec(p.dtype, (rows, p.c), (rows * 4,), (kdepth(p), cfg["BN"])))

    def partials_bytes(self, p: ProblemDescription, cfg) -> int:
        return ceil_div(super().partials_bytes(p, cfg), WS_ALIGN) * WS_ALIGN

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        """The split's partial planes (256-byte aligned), then the rewritten filters."""
        p = problem.as_conv()
        return self.partials_bytes(p, self.config_of(p, config)) + flipped_bytes(p)
