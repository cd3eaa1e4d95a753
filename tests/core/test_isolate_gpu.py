"""Isolation on the GPU: with MIOFIND_ISOLATE=1, a candidate that writes out of bounds (an illegal
address, a sticky error) breaks only the context of the child process that checks it; the find
returns the good solvers' verified solutions, records the failure (stage isolate), and this
process's CUDA context still works."""

from __future__ import annotations

import logging
import os

import pytest

from miofind.problem import ProblemDescription

REAL = ["ConvDirectNaiveConvFwd", "GemmFwdRest", "ConvImplicitGemmFwd"]


@pytest.mark.gpu
def test_isolation_keeps_the_find_alive_when_a_candidate_writes_out_of_bounds(tmp_db, monkeypatch, caplog):
    import cupy

    import miofind.find as find_mod
    from miofind import find_solutions
    from miofind.db import FindDB
    from miofind.device import current_device

    here = os.path.dirname(os.path.abspath(__file__))
    monkeypatch.setenv("PYTHONPATH", here + os.pathsep + os.environ.get("PYTHONPATH", ""))  # the child imports it
    monkeypatch.setenv("MIOFIND_ISOLATE", "1")
    from _oob_solver import OutOfBoundsWriteFwd

    bad = OutOfBoundsWriteFwd()
    p = ProblemDescription.make("F", n=4, c=32, k=32, in_size=(28, 28), filter_size=3, pads=1)
    assert bad.applicability(p)
    real_candidates = find_mod.candidates

    def with_bad(problem, solver_ids=None, **kw):
        cands, skipped = real_candidates(problem, solver_ids, **kw)
        return cands[:1] + [bad] + cands[1:], skipped   # not last: candidates after it must still run

    monkeypatch.setattr(find_mod, "candidates", with_bad)
    with caplog.at_level(logging.WARNING, logger="miofind.find"):
        # no early stop: a cut candidate is listed unverified, and this test is about isolation
        r = find_solutions(p, mode="benchmark", solvers=REAL, db=tmp_db, cut_factor=0)
    assert sorted(s.solver_id for s in r) == sorted(REAL) and all(s.verified for s in r)
    (f,) = [f for f in r.failures if f.solver_id == bad.id]
    assert f.stage == "isolate" and ("ILLEGAL_ADDRESS" in f.reason or "illegal memory access" in f.reason), f.reason
    lines = [x.getMessage() for x in caplog.records if "excluded" in x.getMessage()]
    assert len(lines) == 1 and bad.id in lines[0]
    recorded = FindDB(tmp_db).find_failures(current_device().db_name, p.key())
    assert [(x.solver_id, x.stage) for x in recorded] == [(bad.id, "isolate")]
    # this process's context is unharmed
    x = cupy.arange(1000, dtype=cupy.float32)
    assert float(x.sum()) == 499500.0
    cupy.cuda.runtime.deviceSynchronize()
    # a normal-mode find answers from the DB and does not run it again
    again = find_solutions(p, mode="normal", solvers=REAL, db=tmp_db)
    assert again.source == "db" and bad.id not in {s.solver_id for s in again}
