"""The solver registry: one explicit ordered list with stable ids.

A row's number and DB name never change and are never reused; a retired solver keeps its row with
``None`` in place of its class. New solvers are appended at the end.
"""

from __future__ import annotations

import functools
import importlib

from .problem import ProblemDescription
from .solver import Applicability, Solver, SolverInfo

# (number, DB name, "module:Class" under miofind.solvers or None once retired, the directions it
# solves: its class's ``directions``, so that a find imports only its direction's modules)
_ROWS: tuple[tuple[int, str, str | None, str], ...] = (
    (1, "ConvDirectNaiveConvFwd", "direct_naive_fwd:DirectNaiveFwd", "F"),
    (2, "ConvDirectNaiveConvBwd", "direct_naive_bwd:DirectNaiveBwd", "B"),
    (3, "ConvDirectNaiveConvWrw", "direct_naive_wrw:DirectNaiveWrw", "W"),
    (4, "ConvDirectTiledFwd", "direct_tiled_fwd:DirectTiledFwd", "F"),
    (5, "ConvWinograd3x3F23Fwd", "winograd_f23_fwd:WinogradF23Fwd", "F"),
    (6, "ConvWinograd3x3F43Fwd", "winograd_f43_fwd:WinogradF43Fwd", "F"),
    (7, "ConvWinograd3x3F23Bwd", "winograd_f23_bwd:WinogradF23Bwd", "B"),
    (8, "ConvWinograd3x3F43Bwd", "winograd_f43_bwd:WinogradF43Bwd", "B"),
    (9, "GemmFwd1x1_0_1", "gemm_fwd1x1:GemmFwd1x1", "F"),
    (10, "GemmFwdRest", "gemm_fwd_rest:GemmFwdRest", "F"),
    (11, "GemmBwd1x1_stride1", "gemm_bwd1x1:GemmBwd1x1", "B"),
    (12, "GemmBwdRest", "gemm_bwd_rest:GemmBwdRest", "B"),
    (13, "GemmWrw1x1_stride1", "gemm_wrw1x1:GemmWrw1x1", "W"),
    (14, "GemmWrwUniversal", "gemm_wrw_universal:GemmWrwUniversal", "W"),
    (15, "ConvCudnnFwd", "cudnn_fwd:ConvCudnnFwd", "F"),
    (16, "ConvCudnnBwd", "cudnn_bwd:ConvCudnnBwd", "B"),
    (17, "ConvCudnnWrw", "cudnn_wrw:ConvCudnnWrw", "W"),
    (18, "ConvFFTFwd", "fft_fwd:ConvFFTFwd", "F"),
    (19, "ConvFFTBwd", "fft_bwd:ConvFFTBwd", "B"),
    (20, "ConvDepthwiseFwd", "depthwise_fwd:DepthwiseFwd", "F"),
    (21, "ConvDepthwiseBwd", "depthwise_bwd:DepthwiseBwd", "B"),
    (22, "ConvDepthwiseWrw", "depthwise_wrw:DepthwiseWrw", "W"),
    (23, "ConvGroupedDirectFwd", "depthwise_grouped_fwd:GroupedDirectFwd", "F"),
    (24, "ConvGroupedDirectBwd", "depthwise_grouped_bwd:GroupedDirectBwd", "B"),
    (25, "ConvGroupedDirectWrw", "depthwise_grouped_wrw:GroupedDirectWrw", "W"),
    (26, "ConvImplicitGemmFwd", "implicit_gemm_fwd:ImplicitGemmFwd", "F"),
    (27, "ConvImplicitGemmBwd", "implicit_gemm_bwd:ImplicitGemmBwd", "B"),
    (28, "ConvImplicitGemmWrw", "implicit_gemm_wrw:ImplicitGemmWrw", "W"),
    (29, "ConvImplicitGemmHopperFwd", "implicit_gemm_hopper_fwd:ImplicitGemmHopperFwd", "F"),
    (30, "ConvImplicitGemmHopperBwd", "implicit_gemm_hopper_bwd:ImplicitGemmHopperBwd", "B"),
    (31, "ConvImplicitGemmHopperWrw", "implicit_gemm_hopper_wrw:ImplicitGemmHopperWrw", "W"),
    (32, "ConvImplicitGemmHopperFwdBiasActiv", "implicit_gemm_hopper_fwd_bias_activ:ImplicitGemmHopperFwdBiasActiv", "F"),
    (33, "ConvImplicitGemmSmallCFwd", "implicit_gemm_small_c_fwd:ImplicitGemmSmallCFwd", "F"),
    (34, "ConvImplicitGemmSmallCWrw", "implicit_gemm_small_c_wrw:ImplicitGemmSmallCWrw", "W"),
    (35, "ConvImplicitGemmHopperBwdTf32", "implicit_gemm_hopper_bwd_tf32:ImplicitGemmHopperBwdTf32", "B"),
    (36, "ConvImplicitGemmHopperFwdSwap", "implicit_gemm_hopper_fwd_swap:ImplicitGemmHopperFwdSwap", "F"),
    (37, "ConvImplicitGemmHopperBwdSwap", "implicit_gemm_hopper_bwd_swap:ImplicitGemmHopperBwdSwap", "B"),
    (38, "ConvImplicitGemmHopperFwdTf32Rn", "implicit_gemm_hopper_fwd_tf32_rn:ImplicitGemmHopperFwdTf32Rn", "F"),
    (39, "ConvImplicitGemmHopperBwdTf32Rn", "implicit_gemm_hopper_bwd_tf32_rn:ImplicitGemmHopperBwdTf32Rn", "B"),
    (40, "ConvImplicitGemmHopperFwdNchw", "implicit_gemm_hopper_nchw_fwd:ImplicitGemmHopperFwdNchw", "F"),
    (41, "ConvImplicitGemmHopperBwdNchw", "implicit_gemm_hopper_nchw_bwd:ImplicitGemmHopperBwdNchw", "B"),
    (42, "ConvImplicitGemmHopperWrwNchw", "implicit_gemm_hopper_nchw_wrw:ImplicitGemmHopperWrwNchw", "W"),
    (43, "ConvImplicitGemmHopperFwdTf32RnNchw", "implicit_gemm_hopper_nchw_fwd_tf32_rn:ImplicitGemmHopperFwdTf32RnNchw", "F"),
    (44, "ConvImplicitGemmHopperBwdTf32RnNchw", "implicit_gemm_hopper_nchw_bwd_tf32_rn:ImplicitGemmHopperBwdTf32RnNchw", "B"),
    (45, "ConvImplicitGemmHopperFwdSwapNchw", "implicit_gemm_hopper_nchw_fwd_swap:ImplicitGemmHopperFwdSwapNchw", "F"),
    (46, "ConvImplicitGemmHopperBwdSwapNchw", "implicit_gemm_hopper_nchw_bwd_swap:ImplicitGemmHopperBwdSwapNchw", "B"),
    (47, "ConvImplicitGemmHopperWrwTf32Rn", "implicit_gemm_hopper_wrw_tf32_rn:ImplicitGemmHopperWrwTf32Rn", "W"),
    (48, "ConvImplicitGemmHopperWrwTf32RnNchw", "implicit_gemm_hopper_nchw_wrw_tf32_rn:ImplicitGemmHopperWrwTf32RnNchw", "W"),
    (49, "ConvImplicitGemmHopperFwdTmaStore", "implicit_gemm_hopper_fwd_tma_store:ImplicitGemmHopperFwdTmaStore", "F"),
    # 50: the forward split over a thread-block cluster (session nov30d), slower than the forward's find configs on
    # ResNet-50's small-grid layers (bench/results/session-nov30d/call1/, call6/): retired before any record
    (50, "ConvImplicitGemmHopperFwdClusterSplit", None, "F"),
)


_BY_NUMBER = {row[0]: row for row in _ROWS}


@functools.lru_cache(maxsize=None)
def _load(number: int) -> Solver | None:
    """The solver of registry row ``number`` (None once retired), its module imported on first use."""
    _, sid, target, dirs = _BY_NUMBER[number]
    if target is None:
        return None
    mod, cls = target.split(":")
    solver = getattr(importlib.import_module(f"miofind.solvers.{mod}"), cls)()
    if solver.id != sid:
        raise RuntimeError(f"registry row {number}: class {cls} has id {solver.id!r}, registered as {sid!r}")
    if solver.directions != frozenset(dirs):
        raise RuntimeError(f"registry row {number}: class {cls} solves {''.join(sorted(solver.directions))}, "
                           f"registered for {dirs}")
    return solver


@functools.lru_cache(maxsize=None)
def registry() -> tuple[SolverInfo, ...]:
    """Every row, every live solver's module imported."""
    return tuple(SolverInfo(number, sid, _load(number)) for number, sid, _, _ in _ROWS)


@functools.lru_cache(maxsize=None)
def _live(direction: str | None) -> tuple[Solver, ...]:
    return tuple(s for number, _, target, dirs in _ROWS
                 if target is not None and (direction is None or direction in dirs)
                 for s in (_load(number),))


def solvers(direction: str | None = None) -> list[Solver]:
    """Every live solver in registry order; with ``direction`` ("F", "B" or "W") only those that solve
    it, importing no other solver's module."""
    if direction not in (None, "F", "B", "W"):
        raise ValueError(f"direction={direction!r}: expected 'F', 'B' or 'W'")
    return list(_live(direction))


def get_solver(solver_id: str | int) -> Solver:
    """Look a solver up by DB name or number; ValueError naming the id if unknown or retired. Imports
    only that solver's module."""
    for number, sid, target, _ in _ROWS:
        if sid == solver_id or str(number) == str(solver_id):
            if target is None:
                raise ValueError(f"solver={solver_id!r}: retired")
            return _load(number)
    raise ValueError(f"solver={solver_id!r}: unknown (known: {', '.join(r[1] for r in _ROWS)})")


def applicability_table(problem: ProblemDescription) -> list[tuple[Solver, Applicability]]:
    """Every solver with whether it applies to ``problem`` and, if not, why. Needs no GPU."""
    out = []
    for s in solvers():
        try:
            a = s.applicability(problem)
        except Exception as e:  # a solver bug must not hide the others
            a = Applicability(False, f"applicability check failed: {e.__class__.__name__}: {e}")
        out.append((s, a))
    return out


def reference_solver(direction: str) -> Solver:
    return get_solver({"F": "ConvDirectNaiveConvFwd", "B": "ConvDirectNaiveConvBwd", "W": "ConvDirectNaiveConvWrw"}[direction])
