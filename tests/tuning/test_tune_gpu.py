"""Tuning, find modes and immediate mode on the GPU: a real tune into the PerfDB that find then
uses, fast-mode and predicted answers that run and verify, dynamic_hybrid, and the CLI's tune and run."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import miofind.api as api
import miofind.db.handles as handles
import miofind.find as find
from miofind import ProblemDescription, find_solutions, run_solution
from miofind.db import FindDB
from miofind.reference import conv_reference


P = ProblemDescription.make("F", n=2, c=16, k=32, in_size=(14, 14), filter_size=3, pads=1)


def _solver(sid):
    from miofind.registry import get_solver
    return get_solver(sid)


def _check_runs(sol, p=P):
    import cupy

    rng = np.random.default_rng(0)
    a_shape, b_shape, _ = p.io_shapes()
    a, b = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
    y = run_solution(sol, cupy.asarray(a), cupy.asarray(b))
    ref = conv_reference(p, a.astype(np.float64), b.astype(np.float64))
    err = np.linalg.norm(cupy.asnumpy(y).astype(np.float64) - ref) / np.linalg.norm(ref)
    assert err < 1e-5, (sol.solver_id, err)


@pytest.mark.gpu
def test_tune_stores_a_verified_config_and_find_uses_it(tmp_db):
    from miofind.device import current_device
    from miofind.tuning import Tuner, TuneOptions

    dev = current_device()
    dbs = handles.open_dbs(tmp_db, dev)
    t = Tuner(dbs, dev, TuneOptions(strategy="random", max_configs=8, seed=0, solvers=("ConvImplicitGemmFwd",)))
    out = t.tune_problem(P)
    assert out.status == "done" and out.solutions > 0, out
    (o,) = out.solvers
    assert o.status == "tuned" and o.time_ms > 0 and o.tried >= 2
    (rec,) = FindDB(tmp_db).lookup_perf(dev.db_name, P.key(), "ConvImplicitGemmFwd")
    assert rec.config == o.config and rec.default_time_ms is not None
    found = find_solutions(P, db=tmp_db)
    assert found.source == "db"
    ig = next(s for s in found if s.solver_id == "ConvImplicitGemmFwd")
    # the tuner's find measured the tuned config, and the default beside it where they differ: the faster is kept
    s = _solver("ConvImplicitGemmFwd")
    assert ig.config in (o.config, s.default_config(P.as_conv())) and ig.verified
    _check_runs(ig)
    assert t.tune_problem(P).status == "skipped"


@pytest.mark.gpu
def test_fast_mode_answer_and_prediction_run_and_verify(tmp_db):
    """Fast mode answers a stored problem from the FindDB: it compiles, loads and times nothing (counted once the
    first find's background work has drained, so that only the fast find's own work is counted). Its wall time is
    not asserted: under parallel test workers it measured the host's load (63.6 ms against a 50 ms bound once)."""
    from miofind import compile as mc
    from miofind import tiered

    find_solutions(P, db=tmp_db)
    tiered.wait(300)
    before = dict(mc.stats)
    fast = find_solutions(P, db=tmp_db, mode="fast")
    assert fast.source == "db" and fast.timing is None and len(fast) > 0
    assert (mc.stats["nvrtc_compiles"], mc.stats["modules_loaded"]) == (before["nvrtc_compiles"],
                                                                        before["modules_loaded"])
    _check_runs(fast[0])
    q = ProblemDescription.make("F", n=3, c=16, k=32, in_size=(15, 15), filter_size=3, pads=1)
    pred = api.get_solutions(q, db=tmp_db)
    assert pred.predicted and P.key() in pred.basis
    for s in pred[:3]:
        _check_runs(s, q)


@pytest.mark.gpu
def test_dynamic_hybrid_measures_only_what_needs_no_compilation(tmp_db, tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "cubin"))
    q = ProblemDescription.make("F", n=2, c=24, k=40, in_size=(13, 13), filter_size=3, pads=1)
    cands = find.candidates(q, None)[0]
    ready = {s.id for s in cands if find.needs_no_compilation(q, s, None)}
    res = find_solutions(q, db=tmp_db, mode="dynamic_hybrid")
    skipped = {f.solver_id for f in res.failures if f.stage == "dynamic_hybrid"}
    assert skipped == {s.id for s in cands} - ready
    if ready:
        assert res.source == "find" and {s.solver_id for s in res} <= ready
    else:
        assert res.predicted
    # after a full find every kernel is in the binary cache: dynamic_hybrid then measures them all
    full = find_solutions(q, db=tmp_db, mode="benchmark", store=False, defer=False)
    missing = [s.id for s in cands if s.family != "cudnn" and not find.needs_no_compilation(q, s, None)]
    assert not missing, (missing, [(f.solver_id, f.stage, f.reason) for f in full.failures])


@pytest.mark.gpu
def test_cli_tune_resumes_and_run_verifies(tmp_db, tmp_path):
    from miofind.cli import main

    lines = tmp_path / "lines.txt"
    lines.write_text("conv -n 2 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 1\n"
                     "conv -n 2 -c 32 -H 7 -W 7 -k 32 -y 1 -x 1 -F 1  # 1x1\n")
    r = CliRunner().invoke(main, ["tune", "--file", str(lines), "--max-configs", "4", "--json-out",
                                  str(tmp_path / "o.json")])
    assert r.exit_code == 0, r.output
    assert "tuned 2 problem(s), skipped 0" in r.output
    r = CliRunner().invoke(main, ["tune", "--file", str(lines)])
    assert r.exit_code == 0 and "tuned 0 problem(s), skipped 2" in r.output, r.output
    r = CliRunner().invoke(main, ["run", "conv", "-n", "2", "-c", "16", "-H", "14", "-W", "14", "-k", "32", "-y", "3",
                                  "-x", "3", "-p", "1", "-q", "1", "-F", "1", "-S", "ConvImplicitGemmFwd", "-V", "1",
                                  "-t", "1", "-i", "5"])
    assert r.exit_code == 0 and "verifies" in r.output and "GPU kernel time" in r.output, r.output
    assert "(tuned config from the PerfDB)" in r.output, r.output
    r = CliRunner().invoke(main, ["run", "conv", "-n", "2", "-c", "16", "-H", "12", "-W", "12", "-k", "32", "-y", "3",
                                  "-x", "3", "-p", "1", "-q", "1", "-F", "1", "-S", "ConvImplicitGemmFwd", "-V", "1"])
    assert r.exit_code == 0 and "verifies" in r.output and "(default config)" in r.output, r.output
    r = CliRunner().invoke(main, ["run", "conv", "-n", "2", "-c", "16", "-H", "14", "-W", "14", "-k", "32", "-y", "3",
                                  "-x", "3", "-p", "1", "-q", "1", "-F", "0", "-S", "0", "-V", "1"])
    assert r.exit_code == 0 and r.output.count("verifies") == 3, r.output


@pytest.mark.gpu
def test_a_find_answers_no_slower_than_the_default_beside_a_tuned_config(tmp_db, monkeypatch):
    """A stored tuned config and the default beside it: the find keeps the faster. Each is timed alone first (the
    default by a find of an empty DB, the tuned one by a find that sets nothing beside it); the find of both answers
    within 15% of the faster of those, with one of the two configs."""
    from miofind.db.findb import PerfRecord
    from miofind.device import current_device
    from miofind.trust import trust_key

    dev, sid = current_device(), "ConvImplicitGemmFwd"
    p = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
    s = _solver(sid)
    tuned = {"BM": 128, "BN": 128, "TM": 8, "TN": 8, "BK": 8, "STAGES": 3}      # half its tile past N = 64
    assert s.is_valid_config(p.as_conv(), tuned) and tuned != s.default_config(p.as_conv())

    def one(**kw):
        (sol,) = [x for x in find_solutions(p, db=tmp_db, mode="benchmark", solvers=[sid], **kw) if x.solver_id == sid]
        _check_runs(sol, p)
        return sol
    alone_default = one()
    FindDB(tmp_db).store_perf([PerfRecord(dev.db_name, p.key(), sid, tuned, 0.001, kernel_hash=trust_key(s),
                                          cuda_version=dev.cuda_version)])
    with monkeypatch.context() as m:
        m.setattr(find, "beside_tuned", lambda *a: [])
        alone_tuned = one()
    assert alone_tuned.config == tuned
    both = one()
    assert both.config in (tuned, s.default_config(p.as_conv())), both.config     # the default as resolved
    assert both.time_ms <= 1.15 * min(alone_default.time_ms, alone_tuned.time_ms), \
        (both.time_ms, alone_default.time_ms, alone_tuned.time_ms)
