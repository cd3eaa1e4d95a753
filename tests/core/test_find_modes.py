"""Find modes, immediate mode and the user-over-system overlay, on the CPU: the device is faked and
benchmarking is replaced by a recorder, so what is measured and what is read is visible."""

from __future__ import annotations

import time

import pytest

import miofind.api as api
import miofind.find as find
from miofind.trust import trust_key
from miofind import __version__
from miofind.db import FindDB, Record
from miofind.device import DeviceInfo
from miofind.problem import ProblemDescription

DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)


@pytest.fixture
def env(tmp_path, monkeypatch, tmp_db):
    monkeypatch.setattr(find, "current_device", lambda *a: DEV)
    monkeypatch.setattr(api, "current_device", lambda *a: DEV)
    benchmarked = []

    def fake_benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed, configs=None, budget_ms=None):
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


def test_normal_benchmarks_until_every_candidate_is_stored(env):
    benchmarked, url = env
    r = api.find_solutions(P, mode="normal")
    assert r.source == "find" and r.stored and len(benchmarked) == 1
    r = api.find_solutions(P, mode="normal")
    assert r.source == "db" and r.db_layer == "user" and len(benchmarked) == 1
    FindDB(url).delete(solver_id=cands()[0].id)
    assert api.find_solutions(P, mode="normal").source == "find" and len(benchmarked) == 2


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
    assert r[-1].solver_id == "ConvDirectNaiveConvFwd"  # the cost model ranks the naive solver last
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
    real_lookup = FindDB.lookup
    FindDB.lookup = lambda self, *a, **k: reads.append(a) or real_lookup(self, *a, **k)
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
        FindDB.lookup = real_lookup
    assert api.find_solutions(P, mode="benchmark").source == "find"   # benchmark mode always measures


def test_a_candidate_that_breaks_the_context_stops_the_find_with_one_clear_error(monkeypatch):
    """A sticky CUDA error (illegal address) in one candidate ends the find at once, naming it, instead
    of every later candidate 'failing' the same way; an ordinary failure is recorded and the find goes on."""
    import miofind.find as find_mod
    from miofind.results import Failure

    p = P
    cs = find_mod.candidates(p)[0][:3]

    class H:
        def __init__(self, *a, **k):
            pass

        def workspace(self, n):
            return None

        def release(self):
            pass

        def measure(self, inv, ws, family, *a):
            if inv == "bad":
                raise RuntimeError("CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered")
            if inv == "meh":
                raise RuntimeError("CompileError: something ordinary")
            return find_mod.Harness.__new__(find_mod.Harness) and type("M", (), dict(time_ms=1.0, q20_ms=1.0, q80_ms=1.0,
                                                                                      max_error=0.0))()

    class Sol:
        def __init__(self, sid):
            self.workspace_bytes, self.config = 0, None

    def prepare_all(problem, todo, verify=True):
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
