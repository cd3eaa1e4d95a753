"""Shared body of the three naive direct solvers (kernels_src/direct_naive.cu).

The naive solvers are the GPU reference, like MIOpen's ConvDirectNaiveConv{Fwd,Bwd,Wrw}: every
layout (through per-tensor strides), type, group count, dilation, stride, 2D and 3D, with 64-bit
indexing when a tensor has 2^31 elements or more. Sizes are run-time arguments, so one build per
(direction, type, index width) serves every problem.
"""

from __future__ import annotations

import math

import numpy as np

from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.launch import PTR, Launch
from miofind.tensors import CUDA_TYPES, element_strides, index_overflow, wide_index

SOURCE = "direct_naive.cu"
# the float64 reference's backward data: the same sum with the filter taps outermost (its stride tests once per tap)
REFERENCE_BWD_SOURCE, REFERENCE_BWD_KERNEL = "reference_bwd.cu", "reference_conv_bwd"
# ... and its forward: the taps outermost too, channels-last outputs decoded with k fastest
REFERENCE_FWD_SOURCE, REFERENCE_FWD_KERNEL = "reference_fwd.cu", "reference_conv_fwd"
# ... where x and w are channels-last with at least REFERENCE_FWD_WARP_CPG channels a group and at least
# REFERENCE_FWD_WARP_MACS products an output, a warp per y element (with fewer, its shuffles cost more than its lanes
# gain: 1.7x the thread-per-output kernel's time on a 64-channel 1x1 layer, 0.59x on a 256-channel one;
# bench/results/session-nov27i/call9/r/ref_time_f.md)
REFERENCE_FWD_WARP_KERNEL, REFERENCE_FWD_WARP_CPG, REFERENCE_FWD_WARP_MACS = "reference_conv_fwd_warp", 32, 256
# ... and its backward weights where x is channels-last: a warp takes 32 consecutive dw elements (c fastest), a block's
# warps split the output rows
REFERENCE_WRW_SOURCE, REFERENCE_WRW_KERNEL = "reference_wrw.cu", "reference_conv_wrw"
REFERENCE_WRW_LAYOUTS = ("NHWC", "NDHWC")
# ... and channels-first: naive_conv_wrw's blocks, each thread walking its output pixels by carries, not divisions
REFERENCE_WRW_CF_KERNEL = "reference_conv_wrw_cf"
BLOCK = 256
WRW_BLOCK = 256
MAX_GRID = 1 << 20
STEP = MAX_GRID * max(BLOCK, WRW_BLOCK)      # the largest grid-stride increment


class DirectNaiveBase(Solver):
    family = "direct"
    is_reference = True
    arbitrary_out_size = True
    kernel_files = (SOURCE,)
    kernel_name = ""

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        for lay in problem.layouts:
            if lay not in ("NCHW", "NHWC", "NCDHW", "NDHWC"):
                return not_applicable(f"layout {lay} not supported")
        why = index_overflow(problem, STEP)
        if why:
            return not_applicable(why)
        return APPLICABLE

    @staticmethod
    def reference_fwd_warp(problem: ProblemDescription) -> bool:
        """Whether the float64 reference of ``problem`` (a plain convolution) runs the forward's warp-per-output
        kernel (``REFERENCE_FWD_WARP_KERNEL``)."""
        cpg = problem.c // problem.groups
        return (problem.direction == "F" and all(lay in ("NHWC", "NDHWC") for lay in problem.layouts[:2])
                and cpg >= REFERENCE_FWD_WARP_CPG and cpg * math.prod(problem.filter_size) >= REFERENCE_FWD_WARP_MACS)

    def get_solution(self, problem: ProblemDescription, config=None, *, reference: bool = False) -> ConvSolution:
        """``reference=True`` builds the float64 variant used to verify other solvers: its own kernels for forward
        data (``REFERENCE_FWD_SOURCE``, a warp per output where ``reference_fwd_warp``), backward data
        (``REFERENCE_BWD_SOURCE``) and backward weights (``REFERENCE_WRW_SOURCE``: ``REFERENCE_WRW_KERNEL`` with x in
        ``REFERENCE_WRW_LAYOUTS``, else ``REFERENCE_WRW_CF_KERNEL``)."""
        p = problem.as_conv()
        wide = wide_index(p, STEP)      # counts the grid-stride step (an int loop index must not wrap)
        dtype = "FP64" if reference else p.dtype
        macros = (("DATA_T", CUDA_TYPES[dtype]), ("ACC_T", "double" if reference else "float"),
                  ("INDEX_T", "long long" if wide else "int"), ("WRW_BLOCK", str(WRW_BLOCK)))
        ref_wrw = reference and p.direction == "W" and p.layouts[0] in REFERENCE_WRW_LAYOUTS
        ref_fwd_warp = reference and self.reference_fwd_warp(p)
        if p.direction == "W":
            total = p.k * (p.c // p.groups) * math.prod(p.filter_size)
            # naive_conv_wrw: a block per dw element; reference_conv_wrw: a block per 32 of them
            grid, block = (min(ceil_div(total, 32) if ref_wrw else total, MAX_GRID), 1, 1), (WRW_BLOCK, 1, 1)
        else:
            total = math.prod(p.y_shape if p.direction == "F" else p.x_shape) * (32 if ref_fwd_warp else 1)
            grid, block = (min(ceil_div(total, BLOCK), MAX_GRID), 1, 1), (BLOCK, 1, 1)
        if reference and p.direction == "B":
            kinfo = KernelInfo(REFERENCE_BWD_SOURCE, REFERENCE_BWD_KERNEL, grid, block, macros=macros)
        elif ref_fwd_warp:
            kinfo = KernelInfo(REFERENCE_FWD_SOURCE, REFERENCE_FWD_WARP_KERNEL, grid, block, macros=macros)
        elif reference and p.direction == "F":
            kinfo = KernelInfo(REFERENCE_FWD_SOURCE, REFERENCE_FWD_KERNEL, grid, block, macros=macros)
        elif ref_wrw:
            kinfo = KernelInfo(REFERENCE_WRW_SOURCE, REFERENCE_WRW_KERNEL, grid, block, macros=macros)
        elif reference and p.direction == "W":
            kinfo = KernelInfo(REFERENCE_WRW_SOURCE, REFERENCE_WRW_CF_KERNEL, grid, block, macros=macros)
        else:
            kinfo = KernelInfo(SOURCE, self.kernel_name, grid, block, macros=macros)
        args = _size_args(p, np.int64 if wide else np.int32)

        def factory(kernels):
            launch = Launch(kernels[0], kinfo.grid, kinfo.block, (PTR, PTR, PTR, *args))

            def invoker(a, b, out, workspace, stream):
                launch(stream, a, b, out)
            return invoker

        return ConvSolution(self.id, [kinfo], 0, factory, None)


def _size_args(p: ProblemDescription, itype) -> tuple:
    nd = p.spatial_dims
    pad3 = lambda t, fill: ((fill,) + tuple(t)) if nd == 2 else tuple(t)  # noqa: E731  (D first)
    di, hi, wi = pad3(p.in_size, 1)
    do, ho, wo = pad3(p.out_size, 1)
    z, y, x = pad3(p.filter_size, 1)
    pd, ph, pw = pad3(p.pads, 0)
    sd, sh, sw = pad3(p.strides, 1)
    dd, dh, dw = pad3(p.dilations, 1)
    xs = element_strides(p.x_shape, p.layouts[0])
    ws = element_strides(p.w_shape, p.layouts[1])
    ys = element_strides(p.y_shape, p.layouts[2])
    vals = (p.n, p.c, p.k, p.groups, di, hi, wi, do, ho, wo, z, y, x, pd, ph, pw, sd, sh, sw, dd, dh, dw, *xs, *ws, *ys)
    return tuple(itype(v) for v in vals)
