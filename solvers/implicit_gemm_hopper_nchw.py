"""Hopper implicit GEMM on channels-first tensors (issue 19: "NHWC first, then NCHW"), as cuDNN runs its NHWC
engines on NCHW data: the channels-first operands are copied to channels-last ones in the workspace
(kernels_src/implicit_gemm_hopper_nchw.cu, one shape-free build per data type), the channels-last solver's kernels run on
the copies, and a channels-last output copy is transposed back into the output. A copy is skipped where the two
layouts coincide (a 1x1 filter's KCYX and KYXC, one pixel, one channel). A 1x1 stride-1 layer without padding is left to
the GEMM solvers, which multiply the NCHW tensors in place.

Each solver here wraps one channels-last Hopper solver (``inner``): its applicability on the channels-last view of
the problem, its configs, tuning space and find configs unchanged. The workspace is the inner solution's, then the
copies, each 256-byte aligned. The invoker keeps the inner recipe's launches (miofind.torch's C++ path replays the
whole chain): its pointers and tensor maps re-pointed from the caller's tensors to the copies."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import numpy as np

from miofind.env import hopper_nchw
from miofind.launch import A, B, OUT, PTR, WS, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES

from .implicit_gemm_base import GRID_YZ
from .implicit_gemm_hopper_base import WS_ALIGN, esize

XPOSE_SRC = "implicit_gemm_hopper_nchw.cu"
TILE = 64                # the transpose's square tile (elements)
MAP_ALIGN = 16           # a tensor map's global address (the inner kernels' copy-engine loads of the copies)


class Copy(NamedTuple):
    """One transpose [batch][rows][cols] -> [batch][cols][rows] between a caller's tensor (``role``) and its copy at
    byte ``offset`` of the workspace: into the copy before the inner launches (an input), or out of it after (the
    output)."""
    role: int
    batch: int
    rows: int
    cols: int
    offset: int

    def kernel(self, dtype: str) -> KernelInfo:
        return KernelInfo(XPOSE_SRC, "igemm_hopper_nchw_xpose",
                          (ceil_div(self.cols, TILE), ceil_div(self.rows, TILE), self.batch),
                          (256, 1, 1), macros=(("DATA_T", CUDA_TYPES[dtype]),))


def channels_last(p: ProblemDescription) -> ProblemDescription:
    """``p`` (2D, channels-first) with every tensor channels-last: the problem the inner solver solves."""
    return dataclasses.replace(p, layouts=("NHWC",) * 3, key_layouts=None)


def transposes(p: ProblemDescription) -> tuple[tuple[int, int, int, int], ...]:
    """(role, batch, rows, cols) of each channels-first tensor as [batch][rows][cols] whose channels-last copy is
    [batch][cols][rows], in the invoker's roles a, b, out (io_shapes: F x, w -> y; B dy, w -> dx; W dy, x -> dw); those
    whose two layouts coincide (rows or cols of 1) are left out."""
    pin, pout, taps = math.prod(p.in_size), math.prod(p.out_size), math.prod(p.filter_size)
    x, y, w = (p.n, p.c, pin), (p.n, p.k, pout), (p.k, p.c, taps)
    w_back = (p.k, taps, p.c)                # dw: KYXC written by the inner kernel, KCYX out
    roles = {"F": ((A, x), (B, w), (OUT, (p.n, pout, p.k))),
             "B": ((A, y), (B, w), (OUT, (p.n, pin, p.c))),
             "W": ((A, y), (B, x), (OUT, w_back))}[p.direction]
    return tuple((r, *shape) for r, shape in roles if shape[1] > 1 and shape[2] > 1)


def plan(p: ProblemDescription, inner_ws: int) -> tuple[tuple[Copy, ...], int]:
    """The copies of problem ``p`` after an inner workspace of ``inner_ws`` bytes, and the whole workspace's bytes."""
    off = ceil_div(inner_ws, WS_ALIGN) * WS_ALIGN
    copies = []
    for role, b, r, c in transposes(p):
        copies.append(Copy(role, b, r, c, off))
        off += ceil_div(b * r * c * esize(p), WS_ALIGN) * WS_ALIGN
    return tuple(copies), (off if copies else inner_ws)


class ChannelsFirstHopper(Solver):
    """A channels-last Hopper solver (``inner_class``) run on channels-first tensors through transposed copies."""
    family = "implicit_gemm_hopper"
    tunable = True
    inner_class: type = Solver
    switch: tuple | None = None     # (a miofind.env switch, its variable) offering this wrapper, where one must

    @functools.cached_property
    def inner(self) -> Solver:
        return self.inner_class()

    @property
    def kernel_files(self):
        return (*self.inner.kernel_files, XPOSE_SRC)

    @property
    def configs_now(self):
        return self.inner.configs_now

    @property
    def deterministic(self):
        return self.inner.deterministic

    @property
    def tune_budget(self):
        return self.inner.tune_budget

    def library_versions(self):
        return self.inner.library_versions()

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if p.spatial_dims != 2:
            return not_applicable(f"{p.spatial_dims}D not supported (2D only)")
        if p.layouts != ("NCHW",) * 3:
            return not_applicable(f"layouts {'/'.join(p.layouts)} not supported (NCHW x, w and y only; "
                                  f"{self.inner.id} takes NHWC)")
        if not hopper_nchw():
            return not_applicable("NCHW wrappers off (MIOFIND_HOPPER_NCHW=0)")
        if self.switch is not None and not self.switch[0]():
            return not_applicable(f"switched off ({self.switch[1]}=0)")
        if math.prod(p.filter_size) == 1 and all(v == 1 for v in p.strides) and not any(p.pads):
            # y[n] = w x[n] on the tensors in place (the GEMM solvers' 1x1 stride-1 case): the copies alone moved 2-4x
            # the bytes and took 3-5x that GEMM's time on ResNet-50's layers (bench/results/session-nov28e/call1)
            return not_applicable("1x1 filter, stride 1, no padding: a batched GEMM on the NCHW tensors in place "
                                  "(GemmFwd1x1_0_1, GemmBwd1x1_stride1, GemmWrw1x1_stride1) needs no copies")
        for _, b, r, _ in transposes(p):
            if b > GRID_YZ or ceil_div(r, TILE) > GRID_YZ:
                return not_applicable(f"a channels-first tensor of [{b}][{r}][...] exceeds the transpose's grid "
                                      f"(at most {GRID_YZ} batches and {GRID_YZ * TILE} rows)")
        a = self.inner.applicability(channels_last(p))
        return a if not a else APPLICABLE

    # -- configs: the inner solver's, on the channels-last view ---------------------------------------------------
    def default_config(self, problem):
        return self.inner.default_config(channels_last(problem.as_conv()))

    def config_space(self, problem):
        return self.inner.config_space(channels_last(problem.as_conv()))

    def find_configs(self, problem, limit=None):
        return self.inner.find_configs(channels_last(problem.as_conv()), limit)

    def more_configs(self, problem, listed):
        return self.inner.more_configs(channels_last(problem.as_conv()), listed)

    def is_valid_config(self, problem, config) -> bool:
        return self.inner.is_valid_config(channels_last(problem.as_conv()), config)

    def legacy_config(self, config):
        return self.inner.legacy_config(config)

    def workspace_bytes(self, problem, config=None) -> int:
        p = problem.as_conv()
        return plan(p, self.inner.workspace_bytes(channels_last(p), config))[1]

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        fits = self.applicability(p)
        if not fits:
            raise ValueError(f"{self.id} does not apply to {p.key()}: {fits.reason}")
        sol = self.inner.get_solution(channels_last(p), config)
        copies, ws = plan(p, sol.workspace_bytes)
        ins = [c for c in copies if c.role != OUT]
        outs = [c for c in copies if c.role == OUT]
        kernels = [c.kernel(p.dtype) for c in ins] + list(sol.kernels) + [c.kernel(p.dtype) for c in outs]
        ni, nk = len(ins), len(sol.kernels)
        sid = self.id
        # the workspace offset of each role whose copy the inner invoker reads or writes (the others: the caller's tensor)
        off = {c.role: c.offset for c in copies}

        def factory(kerns):
            inner = sol.invoker_factory(kerns[ni:ni + nk])

            def xpose(i, c):        # the solution's kernel i: the transpose of copy c
                return Launch(kerns[i], kernels[i].grid, kernels[i].block, (PTR, PTR, np.int32(c.rows), np.int32(c.cols)))
            lin = [xpose(i, c) for i, c in enumerate(ins)]
            lout = [xpose(ni + nk + i, c) for i, c in enumerate(outs)]

            def invoker(a, b, out, workspace, stream):
                if ws and not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                if copies and workspace % MAP_ALIGN:
                    raise ValueError(f"{sid}: workspace at address {workspace:#x} is not {MAP_ALIGN}-byte aligned")
                ptrs = [a, b, out]
                for lk, c in zip(lin, ins):
                    lk(stream, ptrs[c.role], workspace + c.offset)
                inner(*(workspace + off[r] if r in off else ptrs[r] for r in (A, B, OUT)), workspace, stream)
                for lk, c in zip(lout, outs):
                    lk(stream, workspace + c.offset, out)

            recipe = getattr(inner, "recipe", None)
            if recipe is None:
                return invoker
            steps, align, _ = recipe

            def at(role, offset):
                return (WS, off[role] + offset) if role in off else (role, offset)
            chain = [(lk, ((c.role, 0), (WS, c.offset))) for lk, c in zip(lin, ins)]
            for launch, roles, maps in steps:
                chain.append((launch, tuple(at(*r) for r in roles), tuple((*at(r, o), spec) for r, o, spec in maps)))
            chain += [(lk, ((WS, c.offset), (OUT, 0))) for lk, c in zip(lout, outs)]
            # a copied role is read or written by the transpose only (element accesses); the others as the inner needs
            al = tuple(esize(p) if r in off else align[r] for r in (A, B, OUT)) + (max(align[WS], MAP_ALIGN),)
            return with_recipe(invoker, chain, al, bool(ws))

        return ConvSolution(self.id, kernels, ws, factory, sol.config)
