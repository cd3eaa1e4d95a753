"""Find modes, immediate mode and the user-over-system overlay, on the CPU: the device is faked and
benchmarking is replaced by a recorder, so what is measured and what is read is visible."""

from __future__ import annotations

import time

import pytest

import miofind.api as api
import miofind.find as find
from miofind.trust import trust_key
from miofind import __version__
from miofind.db import FindDB, Record, fastread
from miofind.device import DeviceInfo
from miofind.harness import Measurement
from miofind.problem import ProblemDescription
from miofind.solver import Solver

DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)


@pytest.fixture
def env(tmp_path, monkeypatch, tmp_db):
    monkeypatch.setattr(find, "current_device", lambda *a: DEV)
    monkeypatch.setattr(api, "current_device", lambda *a: DEV)
    benchmarked = []

    def fake_benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed, configs=None, budget_ms=None,
                       isolate=frozenset(), **kw):
        benchmarked.append([s.id for s in cands])
        sols = [api.Solution(s.id, s.algorithm, 1.0 + i, s.workspace_bytes(problem), None, True, problem)
                for i, s in enumerate(cands)]
        return sols, [], False

    monkeypatch.setattr(find, "benchmark", fake_benchmark)
    return benchmarked, tmp_db


def cands(p=P):
    return find.candidates(p, None)[0]


def records(p=P, solvers=None, device=DEV.db_name, scale=1.0):
    return [Record(device=device, device_name=DEV.name, problem_key=p.key(), solver_id=s.id, algorithm=s.algorithm,
                   time_ms=scale * (1.0 + i), workspace_bytes=s.workspace_bytes(p), verified=True,
                   package_version=__version__, kernel_hash=trust_key(s), cuda_version="13.0",
                   created_at=time.time())
            for i, s in enumerate(solvers or cands(p))]


class _FakeHarness:
    """Stands in for miofind.harness.Harness in find.benchmark; tests define ``measure``."""

    reference_ms = 0.0
    reference_wait_ms = 0.0

    def __init__(self, *a, **k):
        pass

    @classmethod
    def shared(cls, *a, **k):
        return cls(*a, **k), True

    def workspace(self, n):
        return None

    def release(self):
        pass

    def ready(self):
        pass


def test_normal_benchmarks_until_every_candidate_is_stored(env):
    benchmarked, url = env
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and r.stored and len(benchmarked) == 1
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and r.db_layer == "user" and len(benchmarked) == 1
    FindDB(url).delete(solver_id=cands()[0].id)
    assert api.find_solutions(P, mode="normal").source == "find" and len(benchmarked) == 2


def test_a_deferred_solver_is_marked_and_a_later_process_measures_it_in_its_background(env, monkeypatch):
    """A find that leaves a solver to the background marks it in the user FindDB (stage ``deferred``). A later
    process whose find meets the mark (the first ended before its background job) answers from the DB without it and
    measures it in its own background; the job's stored record drops the mark. Where no background runs for the find
    (MIOFIND_SPECIALIZE=sync, defer=False), the marked solver is a candidate without a record: a find."""
    benchmarked, url = env
    late = cands()[-1]

    def deferring(problem, cands, workspace_limit, verify, warmup, iters, seed, configs=None, deferred=None, **kw):
        benchmarked.append([s.id for s in cands])
        # (a find defers only where its solvers compile in the background: MIOFIND_SPECIALIZE=background)
        now = [s for s in cands if s.id != late.id or deferred is None or find.env.specialize() != "background"]
        if deferred is not None and len(now) < len(cands):
            deferred[late.id] = (late, [None])
        return [api.Solution(s.id, s.algorithm, 1.0 + i, s.workspace_bytes(problem), None, True, problem)
                for i, s in enumerate(now)], [], False
    monkeypatch.setattr(find, "benchmark", deferring)
    jobs = []

    def after_find(problem, sols, failures=(), **kw):
        if kw.get("deferred"):
            jobs.append((problem, kw["deferred"], kw["store"]))
        return []
    monkeypatch.setattr(find.tiered, "after_find", after_find)

    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and late.id not in {s.solver_id for s in r} and len(jobs) == 1
    marks = FindDB(url).find_failures(DEV.db_name, P.key())
    assert [(f.solver_id, f.stage, f.kernel_hash) for f in marks] == [(late.id, "deferred", trust_key(late))]
    api._memo.clear()     # as another process: its memo empty, the first one's job never ran
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and len(benchmarked) == 1 and late.id not in {s.solver_id for s in r}
    assert [(f.solver_id, f.stage) for f in r.failures] == [(late.id, "deferred")]
    (problem, deferred, store), = jobs[1:]
    assert problem.key() == P.key() and list(deferred) == [late.id]
    # where this find has no background, the mark is no answer: a find measures the solver
    for kw, setting in ((dict(defer=False), "background"), ({}, "sync")):
        monkeypatch.setenv("MIOFIND_SPECIALIZE", setting)
        assert api.find_solutions(P, mode="normal", **kw).source == "find" and late.id in benchmarked[-1]
        FindDB(url).delete(solver_id=late.id)
        find.mark_deferred(FindDB(url), DEV, P, {late.id: (late, [None])})
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "background")
    # the background job's record replaces the mark: the next find answers with the solver
    store(api.Solution(late.id, late.algorithm, 0.5, late.workspace_bytes(P), None, True, P))
    assert FindDB(url).find_failures(DEV.db_name, P.key()) == []
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and r[0].solver_id == late.id, [(s.solver_id, s.time_ms) for s in r]
    assert r.failures == [] and len(jobs) == 2, (r.failures, len(jobs))


def test_fast_never_benchmarks(env):
    benchmarked, url = env
    r = api.find_solutions(P, mode="fast")
    assert r.predicted and r.basis == "per-solver cost model" and benchmarked == []
    assert {s.solver_id for s in r} == {s.id for s in cands()} and all(s.source == "predicted" for s in r)
    FindDB(url).store(records(solvers=cands()[:2]))  # a partial record set answers in fast mode
    r = api.find_solutions(P, mode="fast")
    assert r.source == "db" and len(r) == 2 and benchmarked == []


def test_fast_predicts_from_the_nearest_known_problem(env):
    benchmarked, url = env
    q = ProblemDescription.make("F", n=16, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    far = ProblemDescription.make("F", n=16, c=64, k=64, in_size=(56, 56), filter_size=1)  # another filter
    FindDB(url).store(records(q) + records(far, scale=100.0))
    r = api.find_solutions(P, mode="fast")
    assert r.predicted and q.key() in r.basis and benchmarked == []
    by_id = {s.solver_id: s.time_ms for s in r}
    first = cands()[0].id
    assert by_id[first] == pytest.approx(1.0 * P.flops() / q.flops())   # the nearest's time, FLOP-scaled


def test_hybrid_uses_partial_records_and_benchmarks_on_a_miss(env):
    benchmarked, url = env
    assert api.find_solutions(P, mode="hybrid").source == "find" and len(benchmarked) == 1
    FindDB(url).delete(solver_id=cands()[0].id)
    r = api.find_solutions(P, mode="hybrid")
    assert r.source == "db" and len(r) == len(cands()) - 1 and len(benchmarked) == 1


def test_dynamic_hybrid_benchmarks_only_what_needs_no_compilation(env, monkeypatch):
    benchmarked, _ = env
    ready = {cands()[1].id, cands()[3].id}
    monkeypatch.setattr(find, "needs_no_compilation", lambda p, s, cfg: s.id in ready)
    r = api.find_solutions(P, mode="dynamic_hybrid")
    assert r.source == "find" and set(benchmarked[0]) == ready
    assert {f.solver_id for f in r.failures if f.stage == "dynamic_hybrid"} == {s.id for s in cands()} - ready
    monkeypatch.setattr(find, "needs_no_compilation", lambda p, s, cfg: False)
    q = ProblemDescription.make("F", n=8, c=32, k=32, in_size=(28, 28), filter_size=3, pads=1)
    assert api.find_solutions(q, mode="dynamic_hybrid").predicted and len(benchmarked) == 1


def test_benchmark_mode_always_measures(env):
    benchmarked, _ = env
    api.find_solutions(P, mode="benchmark")
    api.find_solutions(P, mode="benchmark")
    assert len(benchmarked) == 2


def test_mode_from_environment_and_bad_mode(env, monkeypatch):
    benchmarked, _ = env
    monkeypatch.setenv("MIOFIND_FIND_MODE", "FAST")
    assert api.find_solutions(P).predicted and benchmarked == []
    with pytest.raises(ValueError, match="mode='turbo'"):
        api.find_solutions(P, mode="turbo")


def test_system_db_answers_and_user_db_wins_per_problem(env, tmp_path, monkeypatch):
    benchmarked, url = env
    sysdb = tmp_path / "sm_90-132.sqlite"
    with FindDB(str(sysdb)) as d:  # a system DB written on another H100 part (other device string)
        d.store(records(device="sm_90-132-OTHER", scale=2.0))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and r.db_layer == "system" and benchmarked == [] and r[0].time_ms == 2.0
    FindDB(url).store(records(scale=0.5))
    r = api.find_solutions(P, mode="normal")
    assert r.db_layer == "user" and r[0].time_ms == 0.5
    # a benchmark writes to the user DB only
    api.find_solutions(P, mode="benchmark")
    with FindDB(str(sysdb), readonly=True) as d:
        assert {x.time_ms for x in d.lookup(None, P.key())} == {2.0 * (1 + i) for i in range(len(cands()))}


def test_get_solutions_is_immediate_and_says_so(env):
    benchmarked, url = env
    r = api.get_solutions(P, device=DEV)
    assert r.predicted and r.source == "predicted" and benchmarked == [] and len(r) == len(cands())
    assert r == sorted(r, key=lambda s: s.time_ms)
    assert "ConvDirectNaiveConvFwd" not in {s.solver_id for s in r}   # as a find: naive only when asked for
    rn = api.get_solutions(P, device=DEV, with_naive=True)
    assert len(rn) == len(r) + 1 and rn[-1].solver_id == "ConvDirectNaiveConvFwd"  # the cost model ranks it last
    FindDB(url).store(records())
    r = api.get_solutions(P, device=DEV)
    assert not r.predicted and r.source == "db" and benchmarked == []


def test_repeated_find_is_memoised_until_this_process_writes(env):
    """The second identical find is a dict lookup (no DB read); a write by this process, or
    clear_caches(), makes the next find read the DBs again."""
    benchmarked, url = env
    api.find_solutions(P, mode="normal")               # benchmarks and stores
    first = api.find_solutions(P, mode="normal")       # read back from the user DB
    assert first.source == "db"
    reads = []
    real_lookup, fast_lookup = FindDB.lookup, fastread.Reader.lookup   # reads through SQLAlchemy or sqlite3
    FindDB.lookup = lambda self, *a, **k: reads.append(a) or real_lookup(self, *a, **k)
    fastread.Reader.lookup = lambda self, *a, **k: reads.append(a) or fast_lookup(self, *a, **k)
    try:
        again = api.find_solutions(P, mode="normal")
        assert reads == [] and again.source == "db" and [s.solver_id for s in again] == [s.solver_id for s in first]
        assert again is not first                        # a copy: the caller may change its list
        FindDB(url).store([])                            # an empty store is no write: still memoised
        api.find_solutions(P, mode="normal")
        assert reads == []
        FindDB(url).delete(solver_id=cands()[-1].id)     # this process wrote: read the DB again
        api.find_solutions(P, mode="normal")
        assert reads
        n = len(reads)
        api.find_solutions(P, mode="fast")
        m = len(reads)
        api.find_solutions(P, mode="fast")
        assert len(reads) == m > n
        api.clear_caches()
        api.find_solutions(P, mode="fast")
        assert len(reads) > m
    finally:
        FindDB.lookup, fastread.Reader.lookup = real_lookup, fast_lookup
    assert api.find_solutions(P, mode="benchmark").source == "find"   # benchmark mode always measures


def test_a_candidate_that_breaks_the_context_stops_the_find_with_one_clear_error(monkeypatch):
    """A sticky CUDA error (illegal address) in one candidate ends the find at once, naming it, instead
    of every later candidate 'failing' the same way; an ordinary failure is recorded and the find goes on."""
    import miofind.find as find_mod
    from miofind.results import Failure

    p = P
    cs = find_mod.candidates(p)[0][:3]

    class H(_FakeHarness):
        def measure(self, inv, ws, family, *a, **k):
            if inv == "bad":
                raise RuntimeError("CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered")
            if inv == "meh":
                raise RuntimeError("CompileError: something ordinary")
            return Measurement(1.0, 1.0, 1.0, 0.0)

    class Sol:
        def __init__(self, sid):
            self.workspace_bytes, self.config = 0, None

    def prepare_all(problem, todo, verify=True, **k):
        invs = ["meh", "bad", "ok"]
        return [(Sol(s.id), invs[i]) for i, (s, _) in enumerate(todo)], None

    monkeypatch.setattr(find_mod, "Harness", H)
    monkeypatch.setattr(find_mod, "prepare_all", prepare_all)
    monkeypatch.setattr(find_mod, "_sticky", lambda reason: "ILLEGAL_ADDRESS" in reason)
    with pytest.raises(find_mod.ContextBrokenError, match=f"{cs[1].id} .*broke the CUDA context.*1 candidate"):
        find_mod.benchmark(p, cs, None, True, 1, 1, None)
    monkeypatch.setattr(find_mod, "_sticky", lambda reason: False)
    sols, failures, _ = find_mod.benchmark(p, cs, None, True, 1, 1, None)
    assert [f.solver_id for f in failures] == [cs[0].id, cs[1].id] and [s.solver_id for s in sols] == [cs[2].id]
    assert isinstance(failures[0], Failure)


# -- failures recorded by earlier finds -------------------------------------------------------------

@pytest.fixture
def failing(env, monkeypatch):
    """``env`` whose fake benchmark fails the solvers named in the returned dict ({id: (stage, reason)})."""
    from miofind.results import Failure

    benchmarked, url = env
    fail: dict[str, tuple[str, str]] = {}

    def fake_benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed, configs=None, budget_ms=None,
                       isolate=frozenset(), **kw):
        benchmarked.append([s.id for s in cands])
        sols, failures = [], []
        for i, s in enumerate(cands):
            # the tuned config, else the default (cuDNN's find_configs lists plans on a GPU: left out)
            cfg = configs(s)[0] if configs is not None and type(s).find_configs is Solver.find_configs else None
            if s.id in fail:
                failures.append(Failure(s.id, *fail[s.id], config=cfg))
            else:
                sols.append(api.Solution(s.id, s.algorithm, 1.0 + i, s.workspace_bytes(problem), cfg, True, problem))
        return sols, failures, False

    monkeypatch.setattr(find, "benchmark", fake_benchmark)
    return benchmarked, url, fail


def _recorded(url, p=P):
    return {f.solver_id: f for f in FindDB(url).find_failures(DEV.db_name, p.key())}


def test_normal_mode_does_not_measure_a_recorded_failure_again(failing):
    benchmarked, url, fail = failing
    bad = cands()[1]
    fail[bad.id] = ("verify", "max element error 0.2 exceeds 3e-05")
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and bad.id not in {s.solver_id for s in r}
    f = _recorded(url)[bad.id]
    assert (f.stage, f.reason, f.kernel_hash, f.cuda_version, f.config) == \
        ("verify", "max element error 0.2 exceeds 3e-05", trust_key(bad), "13.0", None)
    # every other candidate has a trusted record: the failure counts as settled, the DB answers
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and len(benchmarked) == 1
    settled = [x for x in r.failures if x.solver_id == bad.id]
    assert [x.stage for x in settled] == ["verify"] and "recorded by a find" in settled[0].reason
    # a missing record makes normal mode measure again, but not the recorded failure
    FindDB(url).delete(solver_id=cands()[0].id)
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and len(benchmarked) == 2 and bad.id not in benchmarked[1]
    assert cands()[0].id in benchmarked[1] and bad.id in _recorded(url)
    # hybrid's benchmark on a miss leaves it out too
    FindDB(url).delete()
    api.find_solutions(P, mode="hybrid")
    assert len(benchmarked) == 3 and bad.id not in benchmarked[2] and len(benchmarked[2]) == len(cands()) - 1


def test_a_db_given_as_the_system_db_settles_its_failures_too(failing, tmp_path, monkeypatch):
    """A DB filled by finds (records of what worked, failure rows of what was cut or failed) given to another process as
    its system DB (MIOFIND_SYSTEM_DB: a fleet's file) answers without a benchmark: the failure rows settle their
    candidates there as in the user DB, whatever device string the rows carry."""
    benchmarked, url, fail = failing
    cut = cands()[1]
    fail[cut.id] = ("cut", "timing stopped early after 2 timed run(s): at least 3x the best median so far")
    # the cut solver has a record of another problem there: the system DB's answers count it as one of its solvers
    other = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
    FindDB(url).store(records(other, solvers=[cut]))
    assert api.find_solutions(P, mode="normal").source == "find" and len(benchmarked) == 1
    import sqlite3
    path = url.removeprefix("sqlite:///")
    con = sqlite3.connect(path)              # a system DB is read as an immutable file: its WAL written back first,
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")   # as a writer's last close does
    con.close()
    api._memo.clear()
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", path)
    monkeypatch.setenv("MIOFIND_DB", f"sqlite:///{tmp_path / 'new-user.sqlite'}")
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and len(benchmarked) == 1, r.source
    assert cut.id not in {s.solver_id for s in r}
    # a copy without the failure row (another file: a system DB is read as immutable): the cut candidate has nothing
    # there, so a find measures it
    path2 = str(tmp_path / "no-failures.sqlite")
    src, dst = sqlite3.connect(path), sqlite3.connect(path2)
    src.backup(dst)
    dst.execute("DELETE FROM find_failures")
    dst.commit()
    dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    src.close(), dst.close()
    api._memo.clear()
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", path2)
    monkeypatch.setenv("MIOFIND_DB", f"sqlite:///{tmp_path / 'new-user-2.sqlite'}")
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and len(benchmarked) == 2 and cut.id in benchmarked[1]


def test_a_changed_trust_key_or_cuda_major_makes_a_failed_candidate_eligible_again(failing):
    from miofind.db.findb import FindFailure

    benchmarked, url, fail = failing
    bad = cands()[2]
    others = [s for s in cands() if s.id != bad.id]
    FindDB(url).store(records(solvers=others))
    for kernel_hash, cuda in ((trust_key(bad), "12.4"), ("src=0123456789abcdef;v=1", "13.0")):
        FindDB(url).store_find_failures(DEV.db_name, P.key(), [bad.id], [FindFailure(
            DEV.db_name, P.key(), bad.id, None, "launch", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            kernel_hash=kernel_hash, cuda_version=cuda)])
        n = len(benchmarked)
        r = api.find_solutions(P, mode="normal")
        assert r.source == "find" and len(benchmarked) == n + 1 and bad.id in benchmarked[-1]
        assert bad.id not in _recorded(url)     # it succeeded this time: its failure is cleared
        FindDB(url).delete(solver_id=bad.id)
    # under the current key and CUDA major it is settled
    FindDB(url).store_find_failures(DEV.db_name, P.key(), [bad.id], [FindFailure(
        DEV.db_name, P.key(), bad.id, None, "launch", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        kernel_hash=trust_key(bad), cuda_version="13.2")])
    n = len(benchmarked)
    assert api.find_solutions(P, mode="normal").source == "db" and len(benchmarked) == n


def test_benchmark_mode_measures_recorded_failures_and_clears_them_on_success(failing):
    benchmarked, url, fail = failing
    bad = cands()[0]
    fail[bad.id] = ("compile", "NVRTCError: error: identifier undefined")
    api.find_solutions(P, mode="benchmark")
    assert _recorded(url)[bad.id].stage == "compile"
    api.find_solutions(P, mode="benchmark")
    assert len(benchmarked) == 2 and bad.id in benchmarked[1]
    del fail[bad.id]
    r = api.find_solutions(P, mode="benchmark")
    assert bad.id in {s.solver_id for s in r} and _recorded(url) == {}


def test_out_of_memory_is_not_recorded_and_every_candidate_failed_answers_from_the_db(failing):
    benchmarked, url, fail = failing
    oom, rest = cands()[0], cands()[1:]
    fail[oom.id] = ("launch", "OutOfMemoryError: Out of memory allocating 68,719,476,736 bytes")
    for s in rest:
        fail[s.id] = ("verify", "RMS error 1 exceeds 3e-06")
    r = api.find_solutions(P, mode="normal")
    assert list(r) == [] and set(_recorded(url)) == {s.id for s in rest}
    r = api.find_solutions(P, mode="normal")    # only the OOM candidate is measured again
    assert benchmarked[1] == [oom.id] and list(r) == []
    del fail[oom.id]
    r = api.find_solutions(P, mode="normal")
    assert [s.solver_id for s in r] == [oom.id] and len(benchmarked) == 3
    r = api.find_solutions(P, mode="normal")    # settled: from the DB, with the failures listed
    assert r.source == "db" and len(benchmarked) == 3 and {f.solver_id for f in r.failures} == {s.id for s in rest}
    fail[oom.id] = ("verify", "max element error 0.1 exceeds 3e-05")
    api.find_solutions(P, mode="benchmark")     # fails now: its earlier record goes
    assert FindDB(url).lookup(DEV.db_name, P.key()) == [] and oom.id in _recorded(url)
    r = api.find_solutions(P, mode="normal")    # every candidate failed before: nothing to measure
    assert list(r) == [] and r.source == "db" and len(benchmarked) == 4 and len(r.failures) == len(cands())


def test_a_failure_of_the_default_config_does_not_settle_a_tuned_config(failing):
    from miofind.db.findb import PerfRecord

    benchmarked, url, fail = failing
    tun = next(s for s in cands() if s.tunable)
    fail[tun.id] = ("launch", "CUDADriverError: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    api.find_solutions(P, mode="normal")
    assert _recorded(url)[tun.id].config is None
    assert api.find_solutions(P, mode="normal").source == "db"
    cfg = tun.default_config(P.as_conv())
    FindDB(url).store_perf([PerfRecord(DEV.db_name, P.key(), tun.id, cfg, 0.5, kernel_hash=trust_key(tun),
                                       cuda_version="13.0")])
    r = api.find_solutions(P, mode="normal")    # the tuned config has not failed: measured
    assert r.source == "find" and tun.id in benchmarked[-1]
    assert _recorded(url)[tun.id].config == cfg
    n = len(benchmarked)
    assert api.find_solutions(P, mode="normal").source == "db" and len(benchmarked) == n


def test_store_false_records_nothing(failing):
    benchmarked, url, fail = failing
    fail[cands()[0].id] = ("verify", "RMS error 1 exceeds 3e-06")
    api.find_solutions(P, mode="normal", store=False)
    assert _recorded(url) == {}


def _record_failure(url, solver, kernel_hash=None, cuda="13.0", p=P):
    from miofind.db.findb import FindFailure

    FindDB(url).store_find_failures(DEV.db_name, p.key(), [solver.id], [FindFailure(
        DEV.db_name, p.key(), solver.id, None, "verify", "max element error 0.5 exceeds 3e-05",
        kernel_hash=trust_key(solver) if kernel_hash is None else kernel_hash, cuda_version=cuda)])


def test_immediate_mode_never_offers_a_recorded_failure(env, tmp_path, monkeypatch):
    """get_solutions leaves out a solver whose find failure is recorded under its current trust key,
    from the DB's answer (user or system layer) and from a prediction, and lists it among the
    failures with its stage and reason; a failure under an older key or CUDA major does not count."""
    benchmarked, url = env
    bad = cands()[2]
    ids = lambda r: {s.solver_id for s in r}  # noqa: E731
    assert bad.id in ids(api.get_solutions(P, device=DEV))     # predicted, nothing recorded yet
    _record_failure(url, bad)
    r = api.get_solutions(P, device=DEV)
    assert r.predicted and bad.id not in ids(r) and len(r) == len(cands()) - 1
    (f,) = [f for f in r.failures if f.solver_id == bad.id]
    assert f.stage == "verify" and "max element error 0.5" in f.reason and "recorded by a find" in f.reason
    sysdb = tmp_path / "sm_90-132.sqlite"
    with FindDB(str(sysdb)) as d:   # the system DB has a trusted record of it: still not offered
        d.store(records(device="sm_90-132-OTHER"))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    api.clear_caches()
    r = api.get_solutions(P, device=DEV)
    assert r.source == "db" and r.db_layer == "system" and bad.id not in ids(r) and len(r) == len(cands()) - 1
    FindDB(url).store(records())
    r = api.get_solutions(P, device=DEV)
    assert r.db_layer == "user" and bad.id not in ids(r) and bad.id in {f.solver_id for f in r.failures}
    for key, cuda in (("src=00000000deadbeef;v=1", "13.0"), (trust_key(bad), "12.4")):
        _record_failure(url, bad, key, cuda)       # an older trust key or CUDA major: offered again
        r = api.get_solutions(P, device=DEV)
        assert bad.id in ids(r) and bad.id not in {f.solver_id for f in r.failures}
    assert benchmarked == []


def test_fast_and_hybrid_never_answer_with_a_recorded_failure(failing, tmp_path, monkeypatch):
    """A DB record of a solver (here the system DB's) does not bring back a candidate whose failure is
    recorded here; fast mode's prediction leaves it out too."""
    benchmarked, url, fail = failing
    bad = cands()[1]
    _record_failure(url, bad)
    r = api.find_solutions(P, mode="fast")
    assert r.predicted and bad.id not in {s.solver_id for s in r} and benchmarked == []
    sysdb = tmp_path / "sm_90-132.sqlite"
    with FindDB(str(sysdb)) as d:
        d.store(records(device="sm_90-132-OTHER"))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    api.clear_caches()
    for mode in ("fast", "hybrid", "normal"):
        r = api.find_solutions(P, mode=mode)
        assert r.source == "db" and bad.id not in {s.solver_id for s in r} and len(r) == len(cands()) - 1, mode
        assert [f.stage for f in r.failures if f.solver_id == bad.id] == ["verify"]
    assert benchmarked == []


def test_benchmark_reports_the_config_that_failed(monkeypatch):
    """The Failure of a config that fails verification names that config (what the FindDB records)."""
    import miofind.find as find_mod
    from miofind.harness import VerifyError

    cs = find_mod.candidates(P)[0][:2]

    class H(_FakeHarness):
        def measure(self, inv, ws, family, *a, **k):
            raise VerifyError("max element error 0.5 exceeds 3e-05")

    class Sol:
        workspace_bytes, config = 0, {"BM": 64}

    monkeypatch.setattr(find_mod, "Harness", H)
    monkeypatch.setattr(find_mod, "prepare_all",
                        lambda problem, todo, verify=True, **k: ([(Sol(), "inv") for _ in todo], None))
    _, failures, _ = find_mod.benchmark(P, cs, None, True, 1, 1, None, configs=lambda s: [None, {"plan": s.id}])
    assert [(f.solver_id, f.stage, f.config) for f in failures] == \
        [(cs[0].id, "verify", None), (cs[0].id, "verify", {"plan": cs[0].id}),
         (cs[1].id, "verify", None), (cs[1].id, "verify", {"plan": cs[1].id})]


# -- the FindDB's table of failed find candidates --------------------------------------------------

def test_find_failures_round_trip_and_replace_per_solver(tmp_path):
    from miofind.db.findb import FindFailure

    db = FindDB(str(tmp_path / "f.sqlite"))
    key = P.key()

    def f(sid, cfg=None, stage="verify"):
        return FindFailure(DEV.db_name, key, sid, cfg, stage, "why", "src=1;v=1", "13.0", __version__)

    assert db.store_find_failures(DEV.db_name, key, ["A", "B"], [f("A"), f("A", {"plan": "x"}), f("B", {})]) == 3
    got = db.find_failures(DEV.db_name, key)
    assert [(g.solver_id, g.config) for g in got] == [("A", None), ("A", {"plan": "x"}), ("B", None)]
    assert db.find_failures("sm_80-108", key) == [] and db.stats()["failed_find_candidates"] == 3
    assert db.store_find_failures(DEV.db_name, key, ["A"], []) == 0       # A succeeded: cleared
    assert [g.solver_id for g in db.find_failures(DEV.db_name, key)] == ["B"]
    with pytest.raises(ValueError, match="stage=3"):
        FindFailure(DEV.db_name, key, "A", None, 3, "why")
    with pytest.raises(ValueError, match=r"config=\['x'\]"):
        FindFailure(DEV.db_name, key, "A", ["x"], "verify", "why")
    from miofind.db import FindDBError
    with pytest.raises(FindDBError, match="stored under"):
        db.store_find_failures(DEV.db_name, "other-key", ["B"], [f("B")])
    db.store([Record(device=DEV.db_name, device_name=DEV.name, problem_key=key, solver_id=s, algorithm="a",
                     time_ms=1.0, workspace_bytes=0) for s in ("B", "C")])
    db.store_find_failures(DEV.db_name, key, ["B"], [f("B")], failed=["B"])   # B failed: its record goes
    assert [r.solver_id for r in db.lookup(DEV.db_name, key)] == ["C"]
    assert db.delete(what="find_failures") == 1


def test_a_schema_2_file_reads_as_is_read_only_and_migrates_when_writable(tmp_path):
    """The shipped system DBs are schema version 2: a read-only open reads them unchanged (no failures
    recorded), a writable one adds the table of failed find candidates and keeps every record."""
    from db_files import downgrade_to_schema_2

    from miofind.db import findb as findb_mod
    from miofind.db.findb import FindFailure

    path = tmp_path / "v2.sqlite"
    with FindDB(str(path)) as d:
        d.store(records())
    downgrade_to_schema_2(path)
    before = path.read_bytes()
    with FindDB(str(path), readonly=True) as d:
        assert d.find_failures(DEV.db_name, P.key()) == [] and len(d.lookup(DEV.db_name, P.key())) == len(cands())
        assert d.stats()["schema_version"] == 2 and d.stats()["failed_find_candidates"] == 0
    assert path.read_bytes() == before
    with FindDB(str(path)) as d:
        assert d.stats()["schema_version"] == findb_mod.SCHEMA_VERSION == 4
        assert len(d.lookup(DEV.db_name, P.key())) == len(cands())
        d.store_find_failures(DEV.db_name, P.key(), ["A"],
                              [FindFailure(DEV.db_name, P.key(), "A", None, "launch", "x")])
        assert [f.solver_id for f in d.find_failures(DEV.db_name, P.key())] == ["A"]


def test_the_system_db_vouches_for_the_solvers_it_holds(env, tmp_path, monkeypatch):
    """A solver the shipped DB holds no record of at all (added after it was built) does not make its answers
    incomplete in normal mode: the answer comes from it, without that solver, and nothing is measured. Once the
    file holds any record of that solver (of another problem), a problem without one is measured again; the user
    DB asks for every candidate as before."""
    benchmarked, url = env
    new, *old = cands()
    sysdb = tmp_path / "sm_90-132.sqlite"
    with FindDB(str(sysdb)) as d:
        d.store(records(solvers=old, scale=2.0))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and r.db_layer == "system" and benchmarked == []
    assert {s.solver_id for s in r} == {s.id for s in old}
    sysdb2 = tmp_path / "sm_90-132b.sqlite"
    other = ProblemDescription.make("F", n=16, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
    with FindDB(str(sysdb2)) as d:
        d.store(records(solvers=old, scale=2.0))
        d.store(records(other, solvers=[new]))
    with FindDB(str(sysdb2), readonly=True) as d:     # both readers list the same solvers
        assert d.solver_ids() == {s.id for s in cands()}
    reader = fastread._reader(sysdb2, writable=False, immutable=True)
    assert reader is not None and reader.solver_ids() == {s.id for s in cands()}
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb2))
    fastread._system.clear()
    api.find_solutions(P, mode="normal")
    assert benchmarked == [[s.id for s in cands()]]
    # a user DB holding all but the new solver's records of a problem is incomplete: measured
    q = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(20, 20), filter_size=3, pads=1)
    FindDB(url).store(records(q, solvers=[s for s in cands(q) if s.id != new.id], scale=0.5))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    fastread._system.clear()
    api.find_solutions(q, mode="normal")
    assert len(benchmarked) == 2 and new.id in benchmarked[1]


def _tuned_beside(url, monkeypatch, compiled=lambda p, s, cfg: True):
    """(solver, tuned config, overlay): a tunable own candidate of P with a trusted PerfDB config other than its
    default stored in the user DB at ``url``; ``compiled`` stands in for find.needs_no_compilation."""
    from miofind.db.findb import PerfRecord
    from miofind.db.handles import open_dbs
    from miofind.db.base import config_key

    monkeypatch.setattr(find, "needs_no_compilation", compiled)
    tun = next(s for s in cands() if s.tunable and s.family != "cudnn")
    default = tun.default_config(P.as_conv())
    cfg = next(c for c in tun.config_space(P.as_conv()) if config_key(c) != config_key(default))
    FindDB(url).store_perf([PerfRecord(DEV.db_name, P.key(), tun.id, cfg, 0.5, kernel_hash=trust_key(tun),
                                       cuda_version="13.0")])
    return tun, cfg, open_dbs(url, DEV)


def test_a_find_measures_the_default_beside_a_tuned_config(env, monkeypatch):
    benchmarked, url = env
    tun, cfg, dbs = _tuned_beside(url, monkeypatch)
    first = tun.find_configs(P, 1)[0]
    assert find.find_configs(dbs, DEV, P, tun) == [cfg, first]
    # a find that measures one config of a solver now leaves the default to the background's listing
    assert find.find_configs(dbs, DEV, P, tun, 1) == [cfg]
    # a tuned config that is the default is measured once
    same = tun.default_config(P.as_conv())
    assert find.beside_tuned(P, tun, same) == [] and find.beside_tuned(P, tun, first) == []
    # the benchmark is handed both
    seen = {}

    def fake_benchmark(problem, cands_, workspace_limit, verify, warmup, iters, seed, configs=None, **kw):
        seen.update({s.id: configs(s) for s in cands_ if s.id == tun.id})
        return [api.Solution(s.id, s.algorithm, 1.0, 0, None, True, problem) for s in cands_], [], False
    monkeypatch.setattr(find, "benchmark", fake_benchmark)
    api.find_solutions(P, mode="benchmark")
    assert seen[tun.id] == [cfg, first]


def test_no_default_beside_a_tuned_config_where_only_the_default_would_compile(env, monkeypatch):
    benchmarked, url = env
    tun, cfg, dbs = _tuned_beside(url, monkeypatch)
    first = tun.find_configs(P, 1)[0]
    monkeypatch.setattr(find, "needs_no_compilation", lambda p, s, c: c == cfg)
    assert find.find_configs(dbs, DEV, P, tun) == [cfg]
    monkeypatch.setattr(find, "needs_no_compilation", lambda p, s, c: False)     # both compile: both measured
    assert find.find_configs(dbs, DEV, P, tun) == [cfg, first]


def test_a_cudnn_plan_tuned_stands_alone():
    cud = next(s for s in cands() if s.family == "cudnn")
    assert find.beside_tuned(P, cud, {"engine": 1}) == []


def test_a_failed_tuned_config_does_not_settle_the_default_beside_it(env, monkeypatch):
    from miofind.results import Failure

    benchmarked, url = env
    tun, cfg, dbs = _tuned_beside(url, monkeypatch)
    first = tun.find_configs(P, 1)[0]
    failed = [Failure(tun.id, "launch", "CUDADriverError: CUDA_ERROR_LAUNCH_FAILED", config=cfg)]
    find.record_failures(FindDB(url), DEV, P, [tun], failed, [])
    assert tun.id not in find.settled_failures(dbs, DEV, P, [tun])      # the default beside it has not failed
    failed.append(Failure(tun.id, "launch", "CUDADriverError: CUDA_ERROR_LAUNCH_FAILED", config=first))
    find.record_failures(FindDB(url), DEV, P, [tun], failed, [])
    assert tun.id in find.settled_failures(dbs, DEV, P, [tun])
