"""Running one solver on the GPU against the numpy float64 reference (used by every family)."""

import numpy as np

from miofind.api import Solution, run_solution
from miofind.reference import conv_reference
from miofind.verify import poison, random_array, rel_error, to_float64, tolerance


def check_solver(solver, problem, seed=0, config=None):
    """Run ``solver`` on fresh random inputs with a NaN-poisoned output; return (error, tolerance)."""
    import cupy

    rng = cupy.random.default_rng(seed)
    sa, sb, so = problem.io_shapes()
    dt = problem.dtype
    a, b = random_array(sa, dt, rng), random_array(sb, dt, rng)
    out = cupy.empty(so, dtype=a.dtype)
    poison(out, dt)
    cfg = config if config is not None else solver.default_config(problem.as_conv())
    sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(problem), cfg, False, problem)
    run_solution(sol, a, b, out)
    cupy.cuda.get_current_stream().synchronize()
    ref = conv_reference(problem, cupy.asnumpy(to_float64(a, dt)), cupy.asnumpy(to_float64(b, dt)))
    err = rel_error(to_float64(out, dt), cupy.asarray(ref))
    tol = tolerance(dt, solver.family, problem.as_conv().direction, problem.math)
    assert np.isfinite(err), f"{solver.id}: non-finite output (unwritten elements or overflow)"
    return err, tol


def claim_cases(family, shapes):
    """Every (solver, direction, shape name, dtype, layout) a family could claim, with test ids."""
    from shapes import DTYPES, layouts_for

    cases = [(s, d, name, dt, lay) for s in family for d in "FBW" if d in s.directions
             for name, kw in shapes.items() for dt in DTYPES for lay in layouts_for(kw)]
    return cases, [f"{s.id}-{d}-{n}-{dt}-{lay}" for s, d, n, dt, lay in cases]


def check_claim(solver, direction, shape, kw, dtype, layout, on_reject=None):
    """Applicability both ways: a rejected problem must carry a reason (then the test skips); an
    accepted one must verify against the float64 reference."""
    import pytest

    from miofind.problem import ProblemDescription

    p = ProblemDescription.make(direction, layout=layout, dtype=dtype, **kw)
    a = solver.applicability(p)
    if not a:
        assert a.reason, f"{solver.id} rejected {p.key()} without a reason"
        if on_reject is not None:
            on_reject(p, a)
        pytest.skip(f"not applicable: {a.reason}")
    err, tol = check_solver(solver, p, seed=hash((shape, dtype, layout)) & 0xFFFF)
    assert err <= tol, f"{solver.id} {p.key()}: relative error {err:.3g} > {tol:.1g}"
