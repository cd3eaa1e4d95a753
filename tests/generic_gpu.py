"""Shared by the families' generic-build GPU tests (miofind.generic): the cases a family's generic
builds serve over tests/shapes.py, and one run of a generic build against the float64 reference."""

from __future__ import annotations

import os

import pytest

from shapes import DTYPES, SHAPES, layouts_for
from miofind import generic
from miofind.problem import ProblemDescription


def generic_cases(family_solvers, shapes=SHAPES, dtypes=DTYPES):
    """pytest params (solver, problem) for every case whose solution has a generic build (CPU check)."""
    out = []
    for s in family_solvers:
        for name, kw in shapes.items():
            for lay in layouts_for(kw):
                for dt in dtypes:
                    for d in "FBW":
                        if d not in s.directions:
                            continue
                        p = ProblemDescription.make(d, layout=lay, dtype=dt, **kw)
                        if s.applicability(p) and generic.has_generic(s, p):
                            out.append(pytest.param(s, p, id=f"{s.id}-{d}-{name}-{dt}-{lay}"))
    return out


def check_generic(solver, problem, seed: int = 0, config=None) -> float:
    """Run the generic build of ``solver`` on ``problem`` (random inputs, NaN-poisoned output) and
    verify it against the float64 reference with the find's tolerance; returns the relative L2 error.
    Asserts that the build really is generic: its options carry no problem size. ``config``: a
    tunable solver's config (default: the one find's generic build runs)."""
    from miofind.harness import Harness

    sol = solver.get_solution(problem, generic.generic_config(solver, problem, config))
    gks = generic.generic_kernels(sol)
    assert gks is not None, f"{solver.id}: no generic build for {problem.key()}"
    for g in gks:
        if g is not None:
            assert any("MIOFIND_GP" in v for _, v in g.kinfo.macros)
    inv = generic.build_generic_invoker(sol)
    h = Harness(problem, verify=True, seed=seed)
    try:
        return h.check(inv, h.workspace(sol.workspace_bytes), solver.family)
    finally:
        h.release()


def shared_build(solver, p1, p2, config=None) -> bool:
    """Whether ``p1`` and ``p2`` run the same generic builds of ``solver`` (under ``config``, if given)."""
    def options(p):
        gks = generic.generic_kernels(solver.get_solution(p, generic.generic_config(solver, p, config)))
        return [g.kinfo.compile_options() for g in gks or () if g]

    return bool(options(p1)) and options(p1) == options(p2)


def check_two_shapes_share_a_build(solver, p1, p2, config=None) -> None:
    """Two problems with the same generic build run from their own module instances: each verifies,
    also after the other ran (neither's parameter block was overwritten)."""
    assert shared_build(solver, p1, p2, config), "not one build"
    check_generic(solver, p1, config=config)
    check_generic(solver, p2, config=config)
    check_generic(solver, p1, seed=1, config=config)


def wide_problem(direction: str = "F", **kw) -> ProblemDescription:
    """An FP16 3x3 problem whose x has 2049 * 2 * 1024 * 512 = 2^31 + 2^20 elements, past the 32-bit
    index range (``kw``: e.g. ``groups=2`` for depthwise)."""
    return ProblemDescription.make(direction, n=2049, c=2, k=2, in_size=(1024, 512), filter_size=3, pads=1,
                                   dtype="FP16", **kw)


def check_wide_generic(solver, problem, builds: int | None = None) -> None:
    """A problem past 2^31 elements runs the 64-bit-index generic builds (every generic kernel of
    its solution wide, ``builds`` of them when given), and they verify."""
    sol = solver.get_solution(problem, generic.generic_config(solver, problem, None))
    gks = [g for g in generic.generic_kernels(sol) if g]
    assert gks and all(g.wide for g in gks), gks
    assert builds is None or len(gks) == builds, gks
    check_generic(solver, problem)


def big_selected(request):
    if "big" not in (request.config.getoption("-m") or "") and os.environ.get("MIOFIND_BIG_TESTS") != "1":
        pytest.skip("2^31-element problem: select it with -m big or MIOFIND_BIG_TESTS=1")
