"""What a find spends, on the CPU: the naive solvers left out unless asked for, early stop of
clearly losing candidates (and what the FindDB keeps of them), the order candidates are timed in,
one float64 reference per problem, and the timing breakdown. The device, the compilation and the
measurements are faked; test_harness.py runs the real run loop on faked CUDA events."""

from __future__ import annotations

import gc
import re

import pytest

import miofind.api as api
import miofind.find as find
from miofind import env, harness
from miofind.db import FindDB
from miofind.harness import Harness, Measurement
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

from test_find_modes import DEV, P, _FakeHarness, records

NAIVE = {"F": "ConvDirectNaiveConvFwd", "B": "ConvDirectNaiveConvBwd", "W": "ConvDirectNaiveConvWrw"}


# -- the naive solvers -----------------------------------------------------------------------------

@pytest.mark.parametrize("direction", "FBW")
def test_naive_solvers_are_candidates_only_when_asked_for(direction):
    p = ProblemDescription.make(direction, n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    default = [s.id for s in find.candidates(p)[0]]
    with_naive = [s.id for s in find.candidates(p, with_naive=True)[0]]
    assert NAIVE[direction] not in default and default
    assert set(with_naive) == set(default) | {NAIVE[direction]}
    named = [s.id for s in find.candidates(p, [NAIVE[direction], default[0]])[0]]   # an explicit list runs it
    assert named == [NAIVE[direction], default[0]]


def test_naive_solver_stays_where_nothing_else_applies(monkeypatch):
    others = [s for s in find.all_solvers() if not s.is_reference]
    naive = get_solver(NAIVE["F"])
    monkeypatch.setattr(find, "all_solvers", lambda direction=None: [naive] + [s for s in others if s.family == "fft"])
    q = ProblemDescription.make("F", n=2, c=8, k=8, in_size=(9, 9), filter_size=3, strides=2)  # FFT: stride 1 only
    assert not any(s.applicability(q) for s in others if s.family == "fft")
    assert [s.id for s in find.candidates(q)[0]] == [naive.id]


@pytest.fixture
def fake(tmp_db, monkeypatch):
    """The device faked; ``find.benchmark`` real, over faked compilation and a fake harness whose
    measured times are ``times[solver id]`` (default 1 ms) and which honours ``cut_ms`` as the real one
    does after three runs. Returns (times, measured order, shared() calls, url)."""
    monkeypatch.setattr(find, "current_device", lambda *a: DEV)
    monkeypatch.setattr(api, "current_device", lambda *a: DEV)
    # own solvers only: cuDNN's candidacy depends on whether its frontend is installed, and its
    # solution needs a GPU
    real_candidates = find.candidates

    def own(problem, solver_ids=None, **kw):
        cands, skipped = real_candidates(problem, solver_ids, **kw)
        return [c for c in cands if c.family != "cudnn"], skipped

    monkeypatch.setattr(find, "candidates", own)
    times: dict[str, float] = {}
    order: list[str] = []
    made: list = []

    class Sol:
        workspace_bytes = 0

        def __init__(self, s, cfg):
            self.config = cfg if cfg is not None else s.default_config(P.as_conv())

    class H(_FakeHarness):
        reference_ms = 12.5
        settles: list = []

        @classmethod
        def shared(cls, *a, **k):
            made.append(a)
            return cls(), True

        def measure(self, inv, ws, family, warmup=3, iters=10, budget_ms=None, cut_ms=None, settle=None):
            order.append(inv)
            self.settles.append(settle)
            t = times.get(inv, 1.0)
            if isinstance(t, Measurement):
                return t
            if cut_ms is not None and t >= cut_ms:
                return Measurement(t, t, t, None, runs=3, cut=True, verify_ms=0.5, timing_ms=3 * t)   # not verified
            return Measurement(t, t, t, 1e-7, runs=iters, verify_ms=0.5, timing_ms=(warmup + iters) * t)

    monkeypatch.setattr(find, "Harness", H)
    monkeypatch.setattr(find, "prepare_all",
                        lambda problem, todo, verify=True, **k: ([(Sol(s, c), s.id) for s, c in todo], object()))
    monkeypatch.setattr(find, "to_isolate", lambda *a: frozenset())
    return times, order, made, tmp_db


def test_find_times_naive_only_with_with_naive_or_the_environment(fake, monkeypatch):
    times, order, _, _ = fake
    api.find_solutions(P, mode="benchmark", store=False)
    assert NAIVE["F"] not in order and order
    order.clear()
    api.find_solutions(P, mode="benchmark", store=False, with_naive=True)
    assert NAIVE["F"] in order
    order.clear()
    monkeypatch.setenv("MIOFIND_WITH_NAIVE", "1")
    api.find_solutions(P, mode="benchmark", store=False)
    assert NAIVE["F"] in order
    order.clear()
    api.find_solutions(P, mode="benchmark", store=False, with_naive=False)   # the keyword wins
    assert NAIVE["F"] not in order
    monkeypatch.setenv("MIOFIND_WITH_NAIVE", "yes")
    with pytest.raises(ValueError, match=r"^MIOFIND_WITH_NAIVE='yes': expected 1"):
        api.find_solutions(P, mode="benchmark", store=False)


def test_normal_mode_answers_from_a_db_without_naive_records_and_a_system_db_with_them(fake, tmp_path, monkeypatch):
    """The shipped DB holds naive records: they are simply not read; a user DB written by a default find
    (no naive record) is complete for normal mode."""
    times, order, _, url = fake
    sysdb = tmp_path / "sm_90-132.sqlite"
    with FindDB(str(sysdb)) as d:
        d.store(records(solvers=find.candidates(P, with_naive=True)[0], device="sm_90-132-OTHER"))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and NAIVE["F"] not in {s.solver_id for s in r} and order == []
    r = api.find_solutions(P, mode="normal", with_naive=True)
    assert r.source == "db" and NAIVE["F"] in {s.solver_id for s in r}
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    api.clear_caches()
    assert api.find_solutions(P, mode="normal").source == "find" and NAIVE["F"] not in order
    n = len(order)
    assert api.find_solutions(P, mode="normal").source == "db" and len(order) == n


# -- order and early stop --------------------------------------------------------------------------

def test_candidates_are_timed_in_expected_order(fake, tmp_path, monkeypatch):
    """By the problem's records in the DBs (any trust), else by the cost model."""
    from miofind.predict import model_time_ms

    times, order, _, url = fake
    cands = find.candidates(P)[0]
    api.find_solutions(P, mode="benchmark", store=False, cut_factor=0)
    assert order == [s.id for s in sorted(cands, key=lambda s: model_time_ms(P, s, DEV.sm_count))]
    want = list(reversed([s.id for s in cands]))
    FindDB(url).store([r.__class__(**{**vars(r), "time_ms": float(want.index(r.solver_id) + 1),
                                      "kernel_hash": "src=0000000000000000;v=0"}) for r in records()])
    order.clear()
    api.find_solutions(P, mode="benchmark", store=False, cut_factor=0)
    assert order == want


def test_benchmark_cuts_clearly_losing_candidates_and_reports_them(fake):
    times, order, made, _ = fake
    cs = find.candidates(P)[0][:4]
    times.update({cs[0].id: 1.0, cs[1].id: 5.0, cs[2].id: 2.0, cs[3].id: 2.9})
    timing: dict = {}
    sols, failures, _ = find.benchmark(P, cs, None, True, 3, 10, None, cut_factor=3.0, timing=timing)
    by = {s.solver_id: s for s in sols}
    assert [by[s.id].cut for s in cs] == [False, True, False, False]          # 5 >= 3 x 1; 2.9 < 3
    assert [by[s.id].verified for s in cs] == [True, False, True, True]     # a cut one is not verified
    assert by[cs[1].id].time_ms == 5.0 and by[cs[1].id].runs == 3 and by[cs[0].id].runs == 10
    (f,) = failures
    assert (f.solver_id, f.stage, f.config) == (cs[1].id, "cut", None)      # the config as the find lists it
    assert "after 3 timed run(s)" in f.reason and "3x the best median so far (1 ms)" in f.reason
    assert len(made) == 1 and timing["reference_ms"] == 12.5 and not timing["reference_shared"]
    assert [c["solver_id"] for c in timing["candidates"]] == [s.id for s in cs]
    assert [c["cut"] for c in timing["candidates"]] == [False, True, False, False]
    assert timing["verify_ms"] == pytest.approx(4 * 0.5)
    assert timing["timing_ms"] == pytest.approx(13 * (1.0 + 2.0 + 2.9) + 3 * 5.0)
    assert {"compile_ms", "reference_compile_ms", "isolate_ms"} <= set(timing)
    # early stop also ends a candidate's timing once its runs agree
    assert find.Harness.settles == [harness.SETTLE_SPREAD] * 4
    # off: every candidate is timed fully
    find.Harness.settles.clear()
    sols, failures, _ = find.benchmark(P, cs, None, True, 3, 10, None, cut_factor=0)
    assert not any(s.cut for s in sols) and failures == [] and len(made) == 2
    assert find.Harness.settles == [None] * 4


def _prepare_configs(problem, todo, verify=True, **k):
    """``find.prepare_all`` for the fake harness: each (solver, config) prepared, its invoker the pair."""
    return [(type("S", (), {"workspace_bytes": 0, "config": c})(), (s.id, c)) for s, c in todo], None


def test_a_fully_timed_config_beats_a_cut_one_of_the_same_solver(fake, monkeypatch):
    """What the FindDB can store wins: config b, fully timed (its fastest run under the cut, a noisy
    median of 5 ms), over config a, cut at a 4 ms median."""
    times, order, _, _ = fake
    s0, s1 = find.candidates(P)[0][:2]
    times.update({(s0.id, None): 1.0, (s1.id, "a"): 4.0,
                  (s1.id, "b"): Measurement(5.0, 2.0, 6.0, 1e-7, runs=10)})

    monkeypatch.setattr(find, "prepare_all", _prepare_configs)
    sols, failures, _ = find.benchmark(P, [s0, s1], None, True, 3, 10, None,
                                       configs=lambda s: [None] if s is s0 else ["a", "b"], cut_factor=3.0)
    best = {s.solver_id: s for s in sols}[s1.id]
    assert (best.config, best.cut, best.time_ms) == ("b", False, 5.0) and failures == []
    # every config of a solver cut: the solver is reported cut, and listed once, with its fastest config
    times[(s1.id, "b")] = 4.5
    sols, failures, _ = find.benchmark(P, [s0, s1], None, True, 3, 10, None,
                                       configs=lambda s: [None] if s is s0 else ["a", "b"], cut_factor=3.0)
    best = {s.solver_id: s for s in sols}[s1.id]
    assert (best.config, best.cut) == ("a", True) and [(f.solver_id, f.config) for f in failures] == [(s1.id, "a")]


def test_a_cut_candidate_is_recorded_as_cut_not_as_a_record(fake):
    """Its median is not a full one: no FindDB record; a find failure of stage cut instead, which
    normal mode treats as settled (the DB answers without it); benchmark mode times it again and a
    find without early stop stores it and clears the cut."""
    times, order, _, url = fake
    cs = find.candidates(P)[0]
    slow = cs[-1]
    times[slow.id] = 100.0
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and r.stored and {s.solver_id for s in r if s.cut} == {slow.id}
    assert r[-1].solver_id == slow.id and r[-1].time_ms == 100.0 and r.failures == []
    assert slow.id not in {x.solver_id for x in FindDB(url).lookup(DEV.db_name, P.key())}
    (rec,) = FindDB(url).find_failures(DEV.db_name, P.key())
    assert (rec.solver_id, rec.stage) == (slow.id, "cut")
    n = len(order)
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and len(order) == n and slow.id not in {s.solver_id for s in r}
    assert [(f.solver_id, f.stage) for f in r.failures] == [(slow.id, "cut")] and "recorded by a find" in r.failures[0].reason
    api.find_solutions(P, mode="benchmark")
    assert slow.id in order[n:]
    r = api.find_solutions(P, mode="benchmark", cut_factor=0)
    assert not any(s.cut for s in r) and FindDB(url).find_failures(DEV.db_name, P.key()) == []
    assert slow.id in {x.solver_id for x in FindDB(url).lookup(DEV.db_name, P.key())}


def test_cut_factor_from_keyword_and_environment(fake, monkeypatch):
    times, order, _, _ = fake
    cs = find.candidates(P)[0]
    times.update({s.id: 1.0 + 10.0 * i for i, s in enumerate(cs)})
    monkeypatch.setenv("MIOFIND_CUT_FACTOR", "0")
    assert not any(s.cut for s in api.find_solutions(P, mode="benchmark", store=False))
    monkeypatch.setenv("MIOFIND_CUT_FACTOR", "1e9")
    assert not any(s.cut for s in api.find_solutions(P, mode="benchmark", store=False))
    monkeypatch.delenv("MIOFIND_CUT_FACTOR")
    assert env.cut_factor() == find.FIND_CUT_FACTOR == 3.0
    assert any(s.cut for s in api.find_solutions(P, mode="benchmark", store=False))
    for bad in ("0.5", "fast", "inf", "-3"):
        monkeypatch.setenv("MIOFIND_CUT_FACTOR", bad)
        with pytest.raises(ValueError, match=rf"^MIOFIND_CUT_FACTOR='{bad}': expected a number of at least 1, or 0"):
            api.find_solutions(P, mode="benchmark", store=False)
    monkeypatch.delenv("MIOFIND_CUT_FACTOR")
    for bad in (0.5, True, "3"):
        with pytest.raises(ValueError, match=r"^cut_factor="):
            api.find_solutions(P, mode="benchmark", store=False, cut_factor=bad)


def test_find_result_carries_the_timing_breakdown(fake):
    times, order, _, _ = fake
    r = api.find_solutions(P, mode="benchmark", store=False)
    tm = r.timing
    assert tm["reference_ms"] == 12.5 and len(tm["candidates"]) == len(find.candidates(P)[0])
    assert tm["total_ms"] == r.elapsed_ms and tm["lookup_ms"] <= r.elapsed_ms and "store_ms" in tm
    parts = tm["lookup_parts"]   # lookup_ms in its consecutive parts
    assert list(parts) == ["entry", "device", "candidates", "db", "solver_prefetch", "reads", "cudnn_prefetch", "order"]
    assert min(parts.values()) >= 0 and sum(parts.values()) == pytest.approx(tm["lookup_ms"], rel=1e-9)
    assert api.find_solutions(P, mode="fast").timing is None    # nothing measured: no breakdown


# -- one float64 reference per problem ---------------------------------------------------------------

def test_harness_shared_hands_out_the_live_harness_of_the_same_problem(monkeypatch):
    built = []

    def init(self, problem, *, verify=True, seed=None, reference_invoker=None, wait=True):
        built.append(problem)
        self.problem, self.verify, self.reference_ms = problem, verify, 7.0

    monkeypatch.setattr(Harness, "__init__", init)
    h1, fresh1 = Harness.shared(P, verify=True)
    h2, fresh2 = Harness.shared(P, verify=True)
    assert h1 is h2 and (fresh1, fresh2) == (True, False) and len(built) == 1
    h3, fresh3 = Harness.shared(P, verify=False)    # another verify setting: its own
    q = ProblemDescription.make("B", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    h4, _ = Harness.shared(q, verify=True)
    assert fresh3 and h3 is not h1 and h4 is not h1 and len(built) == 3
    del h1, h2, h3, h4
    gc.collect()
    _, fresh = Harness.shared(P, verify=True)       # none alive any more: a new one
    assert fresh and len(built) == 4


def test_tuner_leaves_naive_out_and_finds_without_early_stop(monkeypatch, tmp_db):
    from miofind.db.handles import open_dbs
    from miofind.tuning.tuner import Tuner

    t = Tuner(open_dbs(tmp_db, DEV), DEV)
    assert NAIVE["F"] not in {s.id for s in t.candidates(P)}
    calls = []
    monkeypatch.setattr(api, "find_solutions", lambda p, **kw: calls.append(kw))
    t._find(P, ["ConvImplicitGemmFwd"])
    assert calls[0]["cut_factor"] == 0 and calls[0]["mode"] == "benchmark"


def test_a_later_config_clearly_slower_than_its_solvers_best_is_cut(fake, monkeypatch):
    """A solver's later configs (cuDNN's plans) are cut at CONFIG_CUT_FACTOR x that solver's best so
    far, well under the find's factor: listed cut and unverified, no failure recorded (the solver has
    a fully timed config); without early stop every config is timed fully."""
    times, order, _, _ = fake
    s0, s1 = find.candidates(P)[0][:2]
    times.update({(s0.id, None): 1.0, (s1.id, "a"): 2.0, (s1.id, "b"): 2.4, (s1.id, "c"): 2.6})

    monkeypatch.setattr(find, "prepare_all", _prepare_configs)
    assert find.CONFIG_CUT_FACTOR == 1.25
    timing: dict = {}
    sols, failures, _ = find.benchmark(P, [s0, s1], None, True, 3, 10, None, timing=timing,
                                       configs=lambda s: [None] if s is s0 else ["a", "b", "c"], cut_factor=3.0)
    assert [(c["config"], c["cut"]) for c in timing["candidates"]][1:] == [("a", False), ("b", False), ("c", True)]
    best = {s.solver_id: s for s in sols}[s1.id]     # 2.4 < 1.25 x 2.0 <= 2.6
    assert (best.config, best.cut, best.verified, best.time_ms) == ("a", False, True, 2.0) and failures == []
    sols, failures, _ = find.benchmark(P, [s0, s1], None, True, 3, 10, None, timing=timing,
                                       configs=lambda s: [None] if s is s0 else ["a", "b", "c"], cut_factor=0)
    assert not any(c["cut"] for c in timing["candidates"]) and failures == []


def test_a_solvers_configs_stop_after_three_cut_in_a_row(fake, monkeypatch):
    """Once a solver has a fully timed config, CONFIG_STOP_AFTER_CUTS of its later configs cut in a row
    end its configs (cuDNN's plans come in its heuristic's order): the rest are not measured and are
    counted in ``configs_stopped``. Cuts before its first fully timed config do not count; without early
    stop every config is timed."""
    times, order, _, _ = fake
    s0, s1 = find.candidates(P)[0][:2]
    cfgs = ["c0", "a", "c1", "c2", "b", "c3", "c4", "c5", "late"]
    times.update({(s0.id, None): 1.0, (s1.id, "a"): 2.0, (s1.id, "b"): 2.2, (s1.id, "late"): 1.5,
                  **{(s1.id, c): 9.0 for c in cfgs if c.startswith("c")}})

    monkeypatch.setattr(find, "prepare_all", _prepare_configs)
    assert find.CONFIG_STOP_AFTER_CUTS == 3
    timing: dict = {}
    sols, failures, _ = find.benchmark(P, [s0, s1], None, True, 3, 10, None, timing=timing,
                                       configs=lambda s: [None] if s is s0 else cfgs, cut_factor=3.0)
    # c0 is cut before any config of s1 is timed; b resets the run after c1, c2; c3-c5 end it
    assert [c["config"] for c in timing["candidates"]][1:] == ["c0", "a", "c1", "c2", "b", "c3", "c4", "c5"]
    assert timing["configs_stopped"] == 1 and order[-1] == (s1.id, "c5")
    best = {s.solver_id: s for s in sols}[s1.id]
    assert (best.config, best.time_ms, best.cut) == ("a", 2.0, False) and failures == []
    sols, _, _ = find.benchmark(P, [s0, s1], None, True, 3, 10, None, timing=timing,
                                configs=lambda s: [None] if s is s0 else cfgs, cut_factor=0)
    assert timing["configs_stopped"] == 0 and {s.solver_id: s for s in sols}[s1.id].config == "late"


def test_the_reference_is_queued_before_the_candidates_are_prepared(fake, monkeypatch):
    """Without child-process checks the harness (inputs, float64 reference) is made first without
    waiting, the candidates are prepared while the GPU computes, and ``ready()`` waits before the
    first measurement; with them the harness is made after the checks, waited for at once."""
    events = []

    class H(_FakeHarness):
        reference_ms, reference_wait_ms = 9.0, 2.0

        @classmethod
        def shared(cls, *a, wait=True, **k):
            events.append(("harness", wait))
            return cls(), True

        def ready(self):
            events.append(("ready",))

        def measure(self, inv, *a, **k):
            events.append(("measure",))
            return Measurement(1.0, 1.0, 1.0, 1e-7, runs=10)

    def prepare(problem, todo, verify=True, times=None, **k):
        events.append(("prepare", len(todo), verify))
        if times is not None and verify:
            times["reference_compile_ms"] = 0.25
        return _prepare_configs(problem, todo)[0], ("ref" if verify else None)

    monkeypatch.setattr(find, "Harness", H)
    monkeypatch.setattr(find, "prepare_all", prepare)
    s0 = find.candidates(P)[0][0]
    timing: dict = {}
    find.benchmark(P, [s0], None, True, 3, 10, None, configs=lambda s: [None], cut_factor=3.0, timing=timing)
    assert events == [("prepare", 0, True), ("harness", False), ("prepare", 1, False), ("ready",), ("measure",)]
    assert (timing["reference_ms"], timing["reference_wait_ms"], timing["reference_compile_ms"]) == (9.0, 2.0, 0.25)
    events.clear()
    monkeypatch.setattr(find, "isolate_candidates", lambda *a: events.append(("isolate",)))
    find.benchmark(P, [s0], None, True, 3, 10, None, configs=lambda s: [None], isolate=frozenset({s0.id}),
                   timing=timing)
    assert events == [("prepare", 1, True), ("isolate",), ("harness", True), ("ready",), ("measure",)]


def _miss_events(monkeypatch) -> list:
    """What a miss does, in order: "preload" (SQLAlchemy's import started), "open" (``open_dbs``), "measure",
    "store" (records written through ``fastwrite``)."""
    from miofind.db import fastwrite

    events = []
    real_open = find.open_dbs
    monkeypatch.setattr(find, "open_dbs", lambda *a, **k: events.append("open") or real_open(*a, **k))
    monkeypatch.setattr(find, "preload_store", lambda: events.append("preload"))
    real_store = fastwrite.Writer.store
    monkeypatch.setattr(fastwrite.Writer, "store", lambda self, recs: events.append("store") or real_store(self, recs))
    real_measure = find.Harness.measure

    def measure(self, *a, **k):
        events.append("measure")
        return real_measure(self, *a, **k)
    monkeypatch.setattr(find.Harness, "measure", measure)
    return events


def test_a_miss_stores_through_sqlite3_after_the_benchmark(fake, monkeypatch):
    """A miss into a SQLite user DB reads through fastread and writes through fastwrite after the last
    measurement: no FindDB is opened and SQLAlchemy's import is not started beside the finds."""
    events = _miss_events(monkeypatch)
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and r.stored
    assert "preload" not in events and "open" not in events and events.count("store") == 1
    assert events.index("store") > max(i for i, e in enumerate(events) if e == "measure")
    assert api.find_solutions(P, mode="normal").source == "db"


def test_a_miss_that_findb_must_store_opens_it_after_the_benchmark_and_imports_it_in_a_thread(fake, monkeypatch):
    """Where fastwrite may not write the user DB (here: said so), ``open_dbs`` (SQLAlchemy) comes after the last
    measurement, its import started in a thread when the miss was known."""
    events = _miss_events(monkeypatch)
    monkeypatch.setattr(find.fastwrite, "writer", lambda db=None: None)
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and r.stored
    assert events[0] == "preload" and events.count("open") == 1 and "measure" in events and "store" not in events
    assert events.index("open") > max(i for i, e in enumerate(events) if e == "measure")


def test_preload_store_imports_the_findb_layer_in_a_thread_once():
    import subprocess
    import sys

    code = ("import sys, threading; import miofind.db.handles as h; assert 'sqlalchemy' not in sys.modules; "
            "h.preload_store(); t = h._preload; h.preload_store(); assert h._preload is t; t.join(60); "
            "print(t.name, 'miofind.db.findb' in sys.modules, 'sqlalchemy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["miofind-db-import", "True", "True"]


def test_a_background_find_measures_a_solvers_first_configs_and_leaves_the_others(fake, monkeypatch):
    """A solver with ``configs_now`` (cuDNN's plans) has only its first configs measured by a find that may
    leave work to the background; the others go to ``tiered.after_find`` as ``later``, with the solver's
    best time of the find. Without deferral, without storing, or outside background mode, every config is
    measured now."""
    from miofind import tiered

    times, order, _, _ = fake
    s1 = find.candidates(P)[0][1]
    cfgs = [{"p": "a"}, {"p": "b"}, {"p": "c"}, {"p": "d"}]
    times.update({(s1.id, "a"): 2.0, (s1.id, "b"): 1.5})
    monkeypatch.setattr(type(s1), "configs_now", 2, raising=False)
    monkeypatch.setattr(type(s1), "find_configs", lambda self, p, limit=None: cfgs[:limit] if limit else cfgs)
    # the fake harness times each (solver id, config name) pair
    monkeypatch.setattr(find, "prepare_all", lambda problem, todo, verify=True, **k: (
        [(type("S", (), {"workspace_bytes": 0, "config": c})(), (s.id, c["p"] if c else c)) for s, c in todo], None))
    seen = []
    monkeypatch.setattr(tiered, "after_find", lambda *a, **kw: seen.append(kw.get("later")) or [])

    def measured():
        return [c for sid, c in (x for x in order if isinstance(x, tuple)) if sid == s1.id]

    r = api.find_solutions(P, mode="benchmark", cut_factor=0)
    assert measured() == ["a", "b"] and r.timing["configs_later"] == 1
    (later,) = seen
    assert list(later) == [s1.id] and later[s1.id][1:] == (cfgs[:2], 1.5)
    for kw in (dict(defer=False), dict(store=False)):
        order.clear()
        api.find_solutions(P, mode="benchmark", cut_factor=0, **kw)
        assert measured() == ["a", "b", "c", "d"] and seen[-1] is None
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    order.clear()
    api.find_solutions(P, mode="benchmark", cut_factor=0)
    assert measured() == ["a", "b", "c", "d"] and seen[-1] is None


# -- candidates the cost model predicts clearly slower --------------------------------------------

class _StubModel:
    """A learned cost model's interface (``miofind.costmodel.CostModel``) with given times per solver."""
    config_basis = "default"

    def __init__(self, times, covers=True):
        self.times, self.covers, self.asked = times, covers, []

    def supports(self, problem, ids):
        return self.covers and not set(ids) & getattr(self, "unknown", set())

    def predict_ms(self, problem, pairs, sm_count=132):
        self.asked.append([s.id for s, _ in pairs])
        return [self.times.get(s.id, 1.0) for s, _ in pairs]


def _system_with_model(monkeypatch, tmp_path, model):
    """A system DB file named as the device's, and ``model`` as the cost model shipped next to it."""
    import miofind.costmodel as cm

    sysdb = tmp_path / "sm_90-132.sqlite"
    FindDB(str(sysdb)).close()
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    monkeypatch.setattr(cm, "model_for_db", lambda path: model if str(path) == str(sysdb) else None)


def test_predicted_losers_by_the_model_where_it_covers_the_problem(fake, tmp_path, monkeypatch):
    from miofind.db.handles import open_dbs

    cands = find.candidates(P)[0][:4]
    model = _StubModel({cands[0].id: 1.0, cands[1].id: 2.0, cands[2].id: 1.9, cands[3].id: 7.0})
    _system_with_model(monkeypatch, tmp_path, model)
    dbs = open_dbs(None, DEV)
    losers = lambda dbs, cs, f: find.predicted_losers(P, dbs, DEV, cs, f, find.recorded_times(P, dbs, DEV))  # noqa: E731
    assert find.predicted_losers(P, dbs, DEV, cands, 2.0, None) == {}   # the DBs' records could not be read
    assert losers(dbs, cands, 2.0) == {cands[1].id: 2.0, cands[3].id: 7.0}
    assert losers(dbs, cands, 3.0) == {cands[3].id: 7.0}
    assert model.asked[-1] == [s.id for s in cands]
    assert losers(dbs, cands, 0) == {}                # off
    assert losers(dbs, cands[:1], 2.0) == {}          # nothing to compare with
    model.covers = False
    assert losers(dbs, cands, 2.0) == {}              # outside the model's training kinds
    model.covers = True
    # a solver the model was not trained on (added after it): never deferred, and the others still are
    model.unknown = {cands[3].id}
    assert losers(dbs, cands, 2.0) == {cands[1].id: 2.0} and model.asked[-1] == [s.id for s in cands[:3]]
    model.unknown = {cands[0].id, cands[1].id, cands[2].id}
    assert losers(dbs, cands, 2.0) == {}              # one known candidate: nothing to compare with
    model.unknown = set()
    # a solver's own lower factor (FFT's, whose cuFFT plans cost far more than its measurement), never a higher one
    own = type(cands[2]).defer_factor
    monkeypatch.setattr(type(cands[2]), "defer_factor", 1.5)
    assert losers(dbs, cands, 2.0) == {cands[1].id: 2.0, cands[2].id: 1.9, cands[3].id: 7.0}
    assert losers(dbs, cands, 1.2) == {cands[1].id: 2.0, cands[2].id: 1.9, cands[3].id: 7.0}
    monkeypatch.setattr(type(cands[2]), "defer_factor", 3.0)
    assert losers(dbs, cands, 2.0) == {cands[1].id: 2.0, cands[3].id: 7.0}
    monkeypatch.setattr(type(cands[2]), "defer_factor", own)
    assert {s.defer_factor for s in find.all_solvers() if s.family == "fft"} == {1.3}
    # a time of any candidate of this problem in a DB layer: measured times order the find, not predictions
    dbs.user.store(records(solvers=cands[2:3]))
    assert losers(dbs, cands, 2.0) == {}
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    assert losers(open_dbs(None, DEV), cands, 2.0) == {}    # no system DB, no model


def test_a_find_leaves_predicted_losers_to_the_background(fake, tmp_path, monkeypatch):
    """A miss measures the candidates the model does not predict at least MIOFIND_PREDICT_DEFER x slower than its
    fastest; the others are listed as deferred, with the predicted ratio, and go to ``tiered.after_find`` as
    deferred solvers, their configs listed there (a callable; a PerfDB-tuned config as a list). Off with the
    variable at 0, ``defer=False``, ``store=False`` or MIOFIND_SPECIALIZE=sync. (MIOFIND_PREDICT_KEEP off: the
    limit on how many are measured at once has its own test below.)"""
    from miofind import tiered

    monkeypatch.setenv("MIOFIND_PREDICT_KEEP", "0")
    times, order, _, _ = fake
    cands = find.candidates(P)[0]
    slow = cands[-1]
    _system_with_model(monkeypatch, tmp_path, _StubModel({slow.id: 5.0}))
    seen = []
    monkeypatch.setattr(tiered, "after_find", lambda *a, **kw: seen.append(kw.get("deferred")) or [])
    r = api.find_solutions(P, mode="benchmark", cut_factor=0)
    assert slow.id not in order and set(order) == {s.id for s in cands[:-1]}
    (f,) = [f for f in r.failures if f.solver_id == slow.id]
    assert f.stage == "deferred" and "predicted 5.0x slower" in f.reason and "MIOFIND_PREDICT_DEFER=2)" in f.reason
    assert r.timing["predicted_deferred"] == 1
    (deferred,) = seen
    (s, configs), = deferred.values()
    assert s is slow and callable(configs) and configs() == list(slow.find_configs(P))
    for kw, var in ((dict(defer=False), {}), (dict(store=False), {}), ({}, {"MIOFIND_PREDICT_DEFER": "0"}),
                    ({}, {"MIOFIND_SPECIALIZE": "sync"})):
        for k, v in var.items():
            monkeypatch.setenv(k, v)
        order.clear()
        api.find_solutions(P, mode="benchmark", cut_factor=0, **kw)
        assert slow.id in order, (kw, var)
        for k in var:
            monkeypatch.delenv(k)
    monkeypatch.setenv("MIOFIND_PREDICT_DEFER", "0.5")
    with pytest.raises(ValueError, match=r"^MIOFIND_PREDICT_DEFER='0.5': expected a number of at least 1, or 0"):
        api.find_solutions(P, mode="benchmark", cut_factor=0)


def test_predicted_surplus_keeps_cudnn_and_the_own_solvers_predicted_fastest(fake, tmp_path, monkeypatch):
    """MIOFIND_PREDICT_KEEP: after the losers, the own candidates beyond the ``keep`` predicted fastest (cuDNN's
    counted among them, always kept; at least one own solver kept) are the surplus, each with its place among the
    ranked candidates, how many were ranked and its predicted ratio to the fastest; never a solver the model was
    not trained on; nothing at 0."""
    from miofind.db.handles import open_dbs

    cands = find.candidates(P)[0][:5]
    assert len(cands) == 5
    t = dict(zip((s.id for s in cands), (1.0, 1.2, 1.1, 1.5, 3.0)))
    model = _StubModel(t)
    _system_with_model(monkeypatch, tmp_path, model)
    dbs = open_dbs(None, DEV)
    rec = find.recorded_times(P, dbs, DEV)
    ids = [s.id for s in cands]

    def split(keep, factor=2.0):
        return find.predicted_deferrals(P, dbs, DEV, cands, factor, keep, rec)

    losers, surplus = split(3)
    assert losers == {ids[4]: 3.0}                                    # the factor's loser is not surplus too
    assert surplus == {ids[3]: (4, 5, 1.5)}                           # kept: 1.0, 1.1, 1.2 (ids 0, 2, 1)
    assert split(0) == ({ids[4]: 3.0}, {})                           # off
    assert split(3, factor=0) == ({}, {ids[3]: (4, 5, 1.5), ids[4]: (5, 5, 3.0)})
    assert split(2)[1] == {ids[1]: (3, 5, 1.2), ids[3]: (4, 5, 1.5)}
    # cuDNN's candidates are always measured and take their places among the kept
    monkeypatch.setattr(type(cands[3]), "family", "cudnn")
    assert split(3)[1] == {ids[1]: (3, 5, 1.2)}                      # kept: 0, 2 and cuDNN's (1.5)
    monkeypatch.setattr(type(cands[1]), "family", "cudnn")
    assert split(3)[1] == {ids[2]: (2, 5, 1.1)}                      # two cuDNN: one own, the fastest
    assert split(2)[1] == {ids[2]: (2, 5, 1.1)}                      # at least one own solver
    monkeypatch.undo()
    _system_with_model(monkeypatch, tmp_path, model)
    # a solver the model was not trained on is measured and not counted
    model.unknown = {ids[0]}
    assert split(2) == ({ids[4]: 3.0 / 1.1}, {ids[3]: (3, 4, 1.5 / 1.1)})
    assert find.predicted_losers(P, dbs, DEV, cands, 2.0, rec) == {ids[4]: 3.0 / 1.1}


def test_a_find_measures_at_most_keep_candidates_at_once(fake, tmp_path, monkeypatch):
    """The surplus is listed as deferred, with its place and MIOFIND_PREDICT_KEEP in the reason, and goes to
    ``tiered.after_find`` as deferred solvers; ``defer=False`` and MIOFIND_PREDICT_KEEP=0 measure it now; a bad value
    is the user's error, named."""
    from miofind import tiered

    times, order, _, _ = fake
    cands = find.candidates(P)[0]
    assert len(cands) > 3
    _system_with_model(monkeypatch, tmp_path, _StubModel({s.id: 1.0 + 0.1 * i for i, s in enumerate(cands)}))
    seen = []
    monkeypatch.setattr(tiered, "after_find", lambda *a, **kw: seen.append(kw.get("deferred")) or [])
    r = api.find_solutions(P, mode="benchmark", cut_factor=0)
    kept = {s.id for s in cands[:3]}
    assert set(order) == kept and r.timing["surplus_deferred"] >= 1
    assert r.timing["surplus_deferred"] + r.timing["predicted_deferred"] == len(cands) - 3
    reasons = [f.reason for s in cands[3:] for f in r.failures if f.solver_id == s.id and f.stage == "deferred"]
    assert len(reasons) == len(cands) - 3
    assert sum("by the cost model" in x and "MIOFIND_PREDICT_KEEP=3" in x for x in reasons) == \
        r.timing["surplus_deferred"]
    assert set(seen[-1]) == {s.id for s in cands[3:]}
    for kw, var in ((dict(defer=False), {}), ({}, {"MIOFIND_PREDICT_KEEP": "0"})):
        for k, v in var.items():
            monkeypatch.setenv(k, v)
        order.clear()
        api.find_solutions(P, mode="benchmark", cut_factor=0, **kw)
        assert {s.id for s in cands if 1.0 + 0.1 * cands.index(s) < 2.0} <= set(order), (kw, var)
        for k in var:
            monkeypatch.delenv(k)
    for bad in ("1", "2.5", "-3", "inf", "x"):
        monkeypatch.setenv("MIOFIND_PREDICT_KEEP", bad)
        with pytest.raises(ValueError, match=rf"^MIOFIND_PREDICT_KEEP='{re.escape(bad)}': expected an integer of at "
                                             r"least 2, or 0"):
            api.find_solutions(P, mode="benchmark", cut_factor=0)
