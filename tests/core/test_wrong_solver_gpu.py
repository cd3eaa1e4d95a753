"""A solver that gets one output element wrong is excluded by find, and the failure is recorded (GPU).

The wrong solver is a copy of implicit GEMM whose invoker, after the real kernels, adds 3x the
element tolerance (of max|out|) to one output element on the same stream: small enough that its RMS
error and its relative L2 error pass (the latter under the old bounds too), so only the per-element
check catches it. It is added to the candidates at run time (``miofind.find.candidates`` patched),
never to the registry.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from miofind.problem import ProblemDescription
from miofind.solver import Solver

REAL = ["ConvDirectNaiveConvFwd", "GemmFwdRest", "ConvImplicitGemmFwd"]
COPIED = "ConvImplicitGemmFwd"


def _corrupting(factory, problem: ProblemDescription, family: str):
    """An invoker factory like ``factory`` whose invokers then make one output element wrong."""
    import cupy

    from miofind.tensors import numpy_dtype
    from miofind.verify import tolerance_for

    n = math.prod(problem.io_shapes()[2])
    dt = numpy_dtype(problem.dtype)
    step = 3.0 * tolerance_for(problem, family).element

    def make(kernels):
        inner = factory(kernels)

        def invoker(a, b, out, workspace, stream):
            inner(a, b, out, workspace, stream)
            mem = cupy.cuda.UnownedMemory(out, n * dt.itemsize, owner=None)
            y = cupy.ndarray((n,), dtype=dt, memptr=cupy.cuda.MemoryPointer(mem, 0))
            with cupy.cuda.ExternalStream(stream):
                y[n // 3] += step * cupy.abs(y).max()

        return invoker

    return make


def wrong_solver(real_id: str = COPIED) -> Solver:
    from miofind.registry import get_solver

    real = get_solver(real_id)

    class OneWrongElement(Solver):
        id = "TestOneWrongElementFwd"
        family, algorithm, directions, dtypes = real.family, real.algorithm, real.directions, real.dtypes
        kernel_files = real.kernel_files

        def applicability(self, problem):
            return real.applicability(problem)

        def workspace_bytes(self, problem, config=None):
            return real.workspace_bytes(problem, config)

        def get_solution(self, problem, config=None):
            sol = real.get_solution(problem, config)
            return dataclasses.replace(sol, solver_id=self.id,
                                       invoker_factory=_corrupting(sol.invoker_factory, problem, self.family))

    return OneWrongElement()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_find_excludes_a_solver_with_one_wrong_element(dtype, tmp_db, monkeypatch):
    import miofind.find as find_mod
    from miofind import find_solutions
    from miofind.db import FindDB
    from miofind.device import current_device
    from miofind.harness import Harness, VerifyError
    from miofind.invokers import build_invoker
    from miofind.verify import tolerance, tolerance_for

    p = ProblemDescription.make("F", n=4, c=32, k=32, in_size=(28, 28), filter_size=3, pads=1, dtype=dtype)
    wrong = wrong_solver()
    assert wrong.applicability(p)

    # the harness alone: only the element check fails it
    h = Harness(p, seed=7)
    sol = wrong.get_solution(p)
    with pytest.raises(VerifyError, match="max element error"):
        h.check(build_invoker(p, sol), h.workspace(sol.workspace_bytes), wrong.family)
    tol = tolerance_for(p, wrong.family)
    assert h.errors.rms <= tol.rms and h.errors.rel_l2 <= tolerance(dtype, wrong.family, "F")
    assert 2 * tol.element < h.errors.max_abs < 4 * tol.element

    # find: the correct solvers are kept and verified, the wrong one fails at "verify" and is recorded
    real_candidates = find_mod.candidates

    def with_wrong(problem, solver_ids=None, **kw):
        cands, skipped = real_candidates(problem, solver_ids, **kw)
        return cands + [wrong], skipped

    monkeypatch.setattr(find_mod, "candidates", with_wrong)
    # no early stop: the naive solver among REAL would be cut in FP16 (recorded as stage "cut")
    r = find_solutions(p, mode="benchmark", solvers=REAL, db=tmp_db, cut_factor=0)
    assert sorted(s.solver_id for s in r) == sorted(REAL) and all(s.verified for s in r)
    fails = [f for f in r.failures if f.solver_id == wrong.id]
    assert [f.stage for f in fails] == ["verify"] and "max element error" in fails[0].reason
    recorded = FindDB(tmp_db).find_failures(current_device().db_name, p.key())
    assert [(f.solver_id, f.stage) for f in recorded] == [(wrong.id, "verify")]

    # normal mode: every other candidate has a record and the wrong one a recorded failure: from the DB
    again = find_solutions(p, mode="normal", solvers=REAL, db=tmp_db)
    assert again.source == "db" and sorted(s.solver_id for s in again) == sorted(REAL)
    assert any(f.solver_id == wrong.id and f.stage == "verify" and "recorded by a find" in f.reason
               for f in again.failures)
