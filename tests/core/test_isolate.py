"""Risky candidates checked in a child process (``miofind.isolate``), on the CPU: the child is faked
(its JSON lines, standard error and exit code), except in the last test, which spawns a real one
that cannot see a GPU."""

from __future__ import annotations

import logging

import pytest

import miofind.find as find_mod
import miofind.isolate as iso
from miofind.harness import Measurement
from miofind.problem import ProblemDescription
from miofind.results import Failure
from test_find_modes import _FakeHarness as FindModesFakeHarness

SMALL = ProblemDescription.make("F", n=2, c=8, k=8, in_size=(16, 16), filter_size=3, pads=1)


def test_risky_from_tensor_sizes_and_the_environment(monkeypatch):
    monkeypatch.delenv("MIOFIND_ISOLATE", raising=False)
    at = ProblemDescription.make("F", n=1024, c=64, k=1, in_size=(128, 128), filter_size=1, dtype="FP16")
    below = ProblemDescription.make("F", n=1023, c=64, k=1, in_size=(128, 128), filter_size=1, dtype="FP16")
    assert max(map(__import__("math").prod, at.io_shapes())) == iso.RISKY_ELEMENTS
    assert iso.is_risky(at) and not iso.is_risky(below) and not iso.is_risky(SMALL)
    # the weights gradient's biggest tensor is an input (dy or x), not its output
    w = ProblemDescription.make("W", n=1024, c=64, k=1, in_size=(128, 128), filter_size=1, dtype="FP16")
    assert iso.is_risky(w)
    monkeypatch.setenv("MIOFIND_ISOLATE", "1")
    assert iso.is_risky(SMALL)
    monkeypatch.setenv("MIOFIND_ISOLATE", "0")
    assert not iso.is_risky(at)
    monkeypatch.setenv("MIOFIND_ISOLATE", "yes")
    with pytest.raises(ValueError, match="MIOFIND_ISOLATE='yes'"):
        iso.is_risky(SMALL)


class FakeChild:
    """Stands in for ``isolate.run_child``: each call pops a script ``fn(request) -> (events, stderr, rc)``."""

    def __init__(self, *scripts):
        self.scripts, self.requests = list(scripts), []

    def __call__(self, request, timeout):
        self.requests.append(request)
        return self.scripts.pop(0)(request)


def ok_until(die_at=None, *, rc=-11, err="", results=None):
    """A child that passes every candidate of its request (or fails those in ``results``: index ->
    (stage, reason, sticky)), dying with ``rc`` once it starts candidate ``die_at``."""
    results = results or {}

    def script(req):
        ev = [{"event": "reference", "ok": True}]
        for i, _ in enumerate(req["candidates"]):
            ev.append({"event": "start", "index": i})
            if i == die_at:
                return ev, err, rc
            if i in results:
                stage, reason, sticky = results[i]
                ev.append({"event": "done", "index": i, "ok": False, "stage": stage, "reason": reason,
                           "sticky": sticky})
                if sticky:
                    return ev, err, 3
            else:
                ev.append({"event": "done", "index": i, "ok": True})
        return ev, err, 0
    return script


CANDS = [("A", None, None), ("B", {"BM": 64}, None), ("C", None, None), ("D", None, None)]
ILLEGAL = "CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"


def test_a_child_that_dies_excludes_that_candidate_and_a_new_child_checks_the_rest(monkeypatch):
    child = FakeChild(ok_until(1, err="Traceback ...\n" + ILLEGAL + "\n"), ok_until())
    monkeypatch.setattr(iso, "run_child", child)
    res = iso.check_in_child(SMALL, CANDS, device=2, seed=5)
    assert res.reference is None and [f is None for f in res.failures] == [True, False, True, True]
    f = res.failures[1]
    assert (f.solver_id, f.stage, f.config) == ("B", "isolate", {"BM": 64})
    assert "died (killed by SIGSEGV)" in f.reason and "CUDA_ERROR_ILLEGAL_ADDRESS" in f.reason
    assert [[c[0] for c in r["candidates"]] for r in child.requests] == [["A", "B", "C", "D"], ["C", "D"]]
    assert child.requests[0]["device"] == 2 and child.requests[0]["problem"] == SMALL.key()


def test_sticky_and_ordinary_failures_reported_by_the_child(monkeypatch):
    child = FakeChild(ok_until(results={0: ("verify", "max element error 0.5 exceeds 3e-05", False),
                                        2: ("launch", ILLEGAL, True)}),
                      ok_until())
    monkeypatch.setattr(iso, "run_child", child)
    res = iso.check_in_child(SMALL, CANDS)
    a, b, c, d = res.failures
    assert (a.stage, a.reason) == ("verify", "max element error 0.5 exceeds 3e-05") and b is None and d is None
    assert c.stage == "isolate" and "broke the CUDA context of a child process" in c.reason and "ILLEGAL" in c.reason
    assert [[x[0] for x in r["candidates"]] for r in child.requests] == [["A", "B", "C", "D"], ["D"]]


def test_reference_failure_timeout_and_a_silent_child(monkeypatch):
    monkeypatch.setattr(iso, "run_child", FakeChild(lambda req: ([{"event": "reference", "ok": False,
                                                                   "reason": ILLEGAL}], "", 2)))
    res = iso.check_in_child(SMALL, CANDS)
    assert res.reference == ILLEGAL and res.failures == [None] * 4
    # timed out in C: C fails as timed out, D is not checked (both not recorded by a find: transient)
    monkeypatch.setattr(iso, "run_child", FakeChild(ok_until(2, rc=None), ok_until()))
    res = iso.check_in_child(SMALL, CANDS, timeout=7)
    assert res.failures[:2] == [None, None] and "timed out after 7 s" in res.failures[2].reason
    child = FakeChild(lambda req: ([{"event": "reference", "ok": True}], "bye", 1))
    monkeypatch.setattr(iso, "run_child", child)
    res = iso.check_in_child(SMALL, CANDS)
    assert len(child.requests) == 1 and all("without checking it" in f.reason for f in res.failures)
    monkeypatch.setattr(iso, "run_child", FakeChild(lambda req: ([], "Segmentation fault", -11)))
    res = iso.check_in_child(SMALL, CANDS)
    assert "before its reference" in res.reference and "SIGSEGV" in res.reference


class _FakeHarness(FindModesFakeHarness):
    def measure(self, inv, ws, family, *a, **k):
        measured.append(inv)
        return Measurement(1.0, 1.0, 1.0, 0.0)


measured: list = []


class _Sol:
    workspace_bytes, config = 0, None


def test_benchmark_runs_only_what_passed_in_the_child_and_logs_each_exclusion(monkeypatch, caplog):
    cs = find_mod.candidates(SMALL)[0][:4]
    measured.clear()
    monkeypatch.setattr(find_mod, "Harness", _FakeHarness)
    monkeypatch.setattr(find_mod, "prepare_all",
                        lambda problem, todo, verify=True, **k: ([(_Sol(), s.id) for s, _ in todo], None))
    seen = []

    def fake_check(problem, checks, device=0, seed=None):
        seen.append([c[0] for c in checks])
        res = iso.IsolationResult(len(checks))
        res.failures[0] = Failure(checks[0][0], "isolate", "the child process died (killed by SIGSEGV) while "
                                  "running it: " + ILLEGAL)
        return res

    monkeypatch.setattr(iso, "check_in_child", fake_check)
    with caplog.at_level(logging.WARNING, logger="miofind.find"):
        sols, failures, _ = find_mod.benchmark(SMALL, cs, None, True, 1, 1, None,
                                               isolate=frozenset(s.id for s in cs[1:]))
    assert seen == [[s.id for s in cs[1:]]]                         # the trusted first one is not checked
    assert measured == [cs[0].id, cs[2].id, cs[3].id]               # the excluded one never runs here
    assert [(f.solver_id, f.stage) for f in failures] == [(cs[1].id, "isolate")]
    assert {s.solver_id for s in sols} == {cs[0].id, cs[2].id, cs[3].id}
    lines = [r.getMessage() for r in caplog.records if "excluded" in r.getMessage()]
    assert len(lines) == 1 and cs[1].id in lines[0] and "CUDA_ERROR_ILLEGAL_ADDRESS" in lines[0]
    assert "\n" not in lines[0]
    # the reference broke in the child: the find stops with one line; failed otherwise: nothing checked
    res = iso.IsolationResult(3)
    res.reference = ILLEGAL
    monkeypatch.setattr(iso, "check_in_child", lambda *a, **k: res)
    with pytest.raises(find_mod.ContextBrokenError, match="float64 reference broke the CUDA context of a child"):
        find_mod.benchmark(SMALL, cs, None, True, 1, 1, None, isolate=frozenset(s.id for s in cs[1:]))
    res.reference = "OutOfMemoryError: out of memory allocating 17,179,869,184 bytes"
    measured.clear()
    sols, failures, _ = find_mod.benchmark(SMALL, cs, None, True, 1, 1, None, isolate=frozenset(s.id for s in cs[1:]))
    assert measured == [cs[0].id] and all(f.reason.startswith("not checked") for f in failures) and len(failures) == 3


def test_no_first_runs_where_candidates_are_checked_in_a_child(monkeypatch):
    """find.first_run runs a GEMM candidate in this process during its preparation: not where the find checks
    candidates in a child process first, which it would run before."""
    cs = find_mod.candidates(SMALL)[0][:4]
    asked = []

    def prepare_all(problem, todo, verify=True, **k):
        if todo:        # (a reference-only call has nothing to run)
            asked.append(k.get("first_runs", True))
        return [(_Sol(), s.id) for s, _ in todo], None

    monkeypatch.setattr(find_mod, "Harness", _FakeHarness)
    monkeypatch.setattr(find_mod, "prepare_all", prepare_all)
    monkeypatch.setattr(iso, "check_in_child", lambda problem, checks, **k: iso.IsolationResult(len(checks)))
    find_mod.benchmark(SMALL, cs, None, True, 1, 1, None)
    find_mod.benchmark(SMALL, cs, None, True, 1, 1, None, isolate=frozenset(s.id for s in cs[1:]))
    assert asked == [True, False]


def test_find_isolates_untrusted_candidates_and_records_what_failed_there(tmp_db, monkeypatch):
    """With MIOFIND_ISOLATE=1 a benchmark checks the candidates without a trusted record in a child; a
    candidate that broke the child's context is recorded (stage isolate) and settled for normal mode;
    one left unchecked (timeout) is not recorded."""
    import miofind.api as api
    from miofind.db import FindDB

    from test_find_modes import DEV, records

    monkeypatch.setattr(find_mod, "current_device", lambda *a: DEV)
    monkeypatch.setattr(api, "current_device", lambda *a: DEV)
    def solved(problem, s):
        sol = _Sol()
        sol.config = s.default_config(problem.as_conv())   # get_solution fills the default in; failures keep None
        return sol

    monkeypatch.setattr(find_mod, "Harness", _FakeHarness)
    monkeypatch.setattr(find_mod, "prepare_all",
                        lambda problem, todo, verify=True, **k: ([(solved(problem, s), s.id) for s, _ in todo], None))
    p = SMALL
    # own solvers only: whether cuDNN's solver is a candidate depends on this machine's frontend
    cs = [s for s in find_mod.candidates(p)[0] if s.family != "cudnn"]
    ids = [s.id for s in cs]
    trusted, bad, slow = cs[0], cs[1], cs[2]
    FindDB(tmp_db).store(records(p, [trusted]))
    seen = []

    def fake_check(problem, checks, device=0, seed=None):
        seen.append({c[0] for c in checks})
        assert all(c[1] is None for c in checks)
        res = iso.IsolationResult(len(checks))
        for i, c in enumerate(checks):
            if c[0] == bad.id:
                res.failures[i] = Failure(c[0], "isolate", "broke the CUDA context of a child process: " + ILLEGAL)
            elif c[0] == slow.id:
                res.failures[i] = Failure(c[0], "isolate", "not checked: the child process timed out after 9 s")
        return res

    monkeypatch.setattr(iso, "check_in_child", fake_check)
    monkeypatch.setenv("MIOFIND_ISOLATE", "0")
    measured.clear()
    api.find_solutions(p, mode="benchmark", solvers=ids)
    assert seen == [] and len(measured) >= len(cs)        # forced off: no child
    FindDB(tmp_db).delete()                               # that find's records would make every candidate trusted
    FindDB(tmp_db).store(records(p, [trusted]))
    monkeypatch.setenv("MIOFIND_ISOLATE", "1")
    measured.clear()
    r = api.find_solutions(p, mode="benchmark", solvers=ids)
    assert seen == [{s.id for s in cs} - {trusted.id}]
    assert bad.id not in measured and slow.id not in measured and trusted.id in measured
    assert {s.solver_id for s in r} == {s.id for s in cs} - {bad.id, slow.id}
    recorded = {f.solver_id: f for f in FindDB(tmp_db).find_failures(DEV.db_name, p.key())}
    assert set(recorded) == {bad.id} and (recorded[bad.id].stage, recorded[bad.id].config) == ("isolate", None)
    r = api.find_solutions(p, mode="normal", solvers=ids)      # normal mode: measures only the unchecked one again
    assert bad.id not in {s.solver_id for s in r} and seen[-1] == {slow.id}
    with pytest.raises(ValueError, match="MIOFIND_ISOLATE='2'"):
        monkeypatch.setenv("MIOFIND_ISOLATE", "2")
        api.find_solutions(p, mode="benchmark")


def test_a_real_child_without_a_gpu_reports_that_its_reference_failed(monkeypatch):
    """The real spawn path: ``python -m miofind.isolate`` starts, reads its request and reports, in
    JSON, that it cannot make the reference here (no GPU); the parent reads it as a reference failure."""
    from miofind.device import NoGPUError, current_device

    try:
        current_device()
        pytest.skip("a GPU is present: tests/core/test_isolate_gpu.py checks a real child there")
    except NoGPUError:
        pass
    res = iso.check_in_child(SMALL, [("ConvDirectNaiveConvFwd", None, None)], timeout=120)
    assert res.reference is not None and res.failures == [None]
    assert "before its reference" not in res.reference   # it said so itself, in JSON


def test_a_solver_added_at_run_time_is_found_by_the_child_through_its_class(monkeypatch):
    from miofind.registry import get_solver

    from _oob_solver import OutOfBoundsWriteFwd

    assert iso.solver_ref(get_solver("GemmFwdRest")) is None
    bad = OutOfBoundsWriteFwd()
    ref = iso.solver_ref(bad)
    assert ref == "_oob_solver:OutOfBoundsWriteFwd"
    assert type(iso._load_solver(bad.id, ref)) is OutOfBoundsWriteFwd
    assert iso._load_solver("GemmFwdRest", None) is get_solver("GemmFwdRest")
