"""The solver registry: one explicit ordered list with stable ids.

A row's number and DB name never change and are never reused; a retired solver keeps its row with
``None`` in place of its class. New solvers are appended at the end.
"""

from __future__ import annotations

import functools
import importlib

from .problem import ProblemDescription
from .solver import Applicability, Solver, SolverInfo

# (number, DB name, "module:Class" under miofind.solvers, or None once retired)
_ROWS: tuple[tuple[int, str, str | None], ...] = (
    (1, "ConvDirectNaiveConvFwd", "direct_naive_fwd:DirectNaiveFwd"),
    (2, "ConvDirectNaiveConvBwd", "direct_naive_bwd:DirectNaiveBwd"),
    (3, "ConvDirectNaiveConvWrw", "direct_naive_wrw:DirectNaiveWrw"),
    (4, "ConvDirectTiledFwd", "direct_tiled_fwd:DirectTiledFwd"),
    (5, "ConvWinograd3x3F23Fwd", "winograd_f23_fwd:WinogradF23Fwd"),
    (6, "ConvWinograd3x3F43Fwd", "winograd_f43_fwd:WinogradF43Fwd"),
    (7, "ConvWinograd3x3F23Bwd", "winograd_f23_bwd:WinogradF23Bwd"),
    (8, "ConvWinograd3x3F43Bwd", "winograd_f43_bwd:WinogradF43Bwd"),
    (9, "GemmFwd1x1_0_1", "gemm_fwd1x1:GemmFwd1x1"),
    (10, "GemmFwdRest", "gemm_fwd_rest:GemmFwdRest"),
    (11, "GemmBwd1x1_stride1", "gemm_bwd1x1:GemmBwd1x1"),
    (12, "GemmBwdRest", "gemm_bwd_rest:GemmBwdRest"),
    (13, "GemmWrw1x1_stride1", "gemm_wrw1x1:GemmWrw1x1"),
    (14, "GemmWrwUniversal", "gemm_wrw_universal:GemmWrwUniversal"),
    (15, "ConvCudnnFwd", "cudnn_fwd:ConvCudnnFwd"),
    (16, "ConvCudnnBwd", "cudnn_bwd:ConvCudnnBwd"),
    (17, "ConvCudnnWrw", "cudnn_wrw:ConvCudnnWrw"),
    (18, "ConvFFTFwd", "fft_fwd:ConvFFTFwd"),
    (19, "ConvFFTBwd", "fft_bwd:ConvFFTBwd"),
    (20, "ConvDepthwiseFwd", "depthwise_fwd:DepthwiseFwd"),
    (21, "ConvDepthwiseBwd", "depthwise_bwd:DepthwiseBwd"),
    (22, "ConvDepthwiseWrw", "depthwise_wrw:DepthwiseWrw"),
    (23, "ConvGroupedDirectFwd", "depthwise_grouped_fwd:GroupedDirectFwd"),
    (24, "ConvGroupedDirectBwd", "depthwise_grouped_bwd:GroupedDirectBwd"),
    (25, "ConvGroupedDirectWrw", "depthwise_grouped_wrw:GroupedDirectWrw"),
    (26, "ConvImplicitGemmFwd", "implicit_gemm_fwd:ImplicitGemmFwd"),
    (27, "ConvImplicitGemmBwd", "implicit_gemm_bwd:ImplicitGemmBwd"),
    (28, "ConvImplicitGemmWrw", "implicit_gemm_wrw:ImplicitGemmWrw"),
    (29, "ConvImplicitGemmHopperFwd", "implicit_gemm_hopper_fwd:ImplicitGemmHopperFwd"),
    (30, "ConvImplicitGemmHopperBwd", "implicit_gemm_hopper_bwd:ImplicitGemmHopperBwd"),
    (31, "ConvImplicitGemmHopperWrw", "implicit_gemm_hopper_wrw:ImplicitGemmHopperWrw"),
)


@functools.lru_cache(maxsize=None)
def registry() -> tuple[SolverInfo, ...]:
    rows = []
    for number, sid, target in _ROWS:
        solver = None
        if target is not None:
            mod, cls = target.split(":")
            solver = getattr(importlib.import_module(f"miofind.solvers.{mod}"), cls)()
            if solver.id != sid:
                raise RuntimeError(f"registry row {number}: class {cls} has id {solver.id!r}, registered as {sid!r}")
        rows.append(SolverInfo(number, sid, solver))
    return tuple(rows)


def solvers() -> list[Solver]:
    """Every live solver, in registry order."""
    return [r.solver for r in registry() if r.solver is not None]


def get_solver(solver_id: str | int) -> Solver:
    """Look a solver up by DB name or number; ValueError naming the id if unknown or retired."""
    for r in registry():
        if r.id == solver_id or str(r.number) == str(solver_id):
            if r.solver is None:
                raise ValueError(f"solver={solver_id!r}: retired")
            return r.solver
    raise ValueError(f"solver={solver_id!r}: unknown (known: {', '.join(r.id for r in registry())})")


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
