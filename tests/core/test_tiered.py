"""Tiered find (miofind.tiered) on the CPU: which build a find measures in each MIOFIND_SPECIALIZE
mode, and the background specialisation's replace-if-faster rule, with compiling and measuring faked."""

from __future__ import annotations

import pytest

import miofind.compile as compile_mod
import miofind.generic as generic
import miofind.invokers as invokers
from miofind import env, tiered
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.results import Solution

P = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
PW = ProblemDescription.make("W", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
DW = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, groups=64)


@pytest.fixture
def fakes(monkeypatch):
    built = []
    monkeypatch.setattr(compile_mod, "is_compiled", lambda k: False)
    monkeypatch.setattr(generic, "build_generic_invoker", lambda sol: built.append(("generic", sol)) or "GEN")
    monkeypatch.setattr(invokers, "build_invoker", lambda p, sol: built.append(("spec", sol)) or "SPEC")
    monkeypatch.setattr(tiered, "_compile_apart", lambda kernels: built.append(("apart", kernels)))
    tiered.clear()
    yield built
    tiered.wait(10)
    tiered.clear()


def _prep(p, sid, mode, cfg=None):
    s = get_solver(sid)
    return tiered.prepare(p, s, cfg, s.get_solution(p, cfg), mode=mode)


def test_a_miss_measures_the_generic_build(fakes):
    sol, inv = _prep(P, "ConvImplicitGemmFwd", "background")
    assert inv == "GEN" and fakes[-1][0] == "generic"
    assert generic.generic_kernels(sol) is not None
    sol, inv = _prep(P, "ConvImplicitGemmFwd", "off")
    assert inv == "GEN"


def test_sync_and_compiled_and_solvers_without_generic_builds_measure_the_specialised(fakes, monkeypatch):
    assert _prep(P, "ConvImplicitGemmFwd", "sync")[1] == "SPEC"
    assert _prep(P, "ConvDirectNaiveConvFwd", "background")[1] == "SPEC"   # sizes are arguments already
    ph = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                                 dtype="FP16")
    assert _prep(ph, "ConvImplicitGemmHopperFwd", "background")[1] == "SPEC"   # wgmma: no generic build
    pb = ProblemDescription.make("B", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
    assert _prep(pb, "ConvImplicitGemmBwd", "sync")[1] == "SPEC"
    monkeypatch.setattr(compile_mod, "is_compiled", lambda k: True)
    assert _prep(P, "ConvImplicitGemmFwd", "background")[1] == "SPEC"


@pytest.mark.parametrize("sid,p", [("GemmFwdRest", P), ("GemmWrwUniversal", PW), ("ConvDepthwiseFwd", DW)])
def test_im2col_and_depthwise_misses_measure_generic_builds(fakes, sid, p):
    sol, inv = _prep(p, sid, "background")
    assert inv == "GEN" and generic.generic_kernels(sol) is not None


def test_generic_wrw_runs_a_rounded_split(fakes):
    sol, inv = _prep(PW, "ConvImplicitGemmWrw", "background")
    assert inv == "GEN" and sol.config["SPLITK"] in generic.GENERIC_SPLITS


def _gen_solution(p, sid, t):
    s = get_solver(sid)
    return Solution(sid, s.algorithm, t, 0, None, True, p)


@pytest.mark.parametrize("spec_ms,replaced", [(0.5, True), (2.0, False)])
def test_background_replaces_only_when_faster(fakes, spec_ms, replaced):
    _prep(P, "ConvImplicitGemmFwd", "background")
    stored = []
    measured = []

    def measure(problem, solver, sol, inv):
        measured.append((solver.id, inv))
        return Solution(solver.id, solver.algorithm, spec_ms, sol.workspace_bytes, sol.config, True, problem)

    jobs = tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=stored.append,
                             mode="background", measure=measure)
    assert len(jobs) == 1
    jobs[0].result(10)
    assert measured == [("ConvImplicitGemmFwd", "SPEC")]
    assert [s.time_ms for s in stored] == ([spec_ms] if replaced else [])
    assert (tiered.ready_invoker(P, "ConvImplicitGemmFwd") is not None) == replaced


def test_unverified_specialised_is_not_stored(fakes):
    _prep(P, "ConvImplicitGemmFwd", "background")
    stored = []
    meas = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 0.1, 0, None, False, p)  # noqa: E731
    (job,) = tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=stored.append,
                               mode="background", measure=meas)
    assert job.result(10) is None and stored == []


def test_no_background_job_when_off_or_sync_or_specialised(fakes):
    _prep(P, "ConvImplicitGemmFwd", "off")
    assert tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=print, mode="off") == []
    # a candidate measured with its specialised build has nothing to specialise
    _prep(P, "ConvImplicitGemmFwd", "sync")
    assert tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=print, mode="background") == []


def test_a_failing_specialisation_is_logged_not_raised(fakes, monkeypatch, caplog):
    _prep(P, "ConvImplicitGemmFwd", "background")

    def boom(p, sol):
        raise compile_mod.CompileError("nvrtc says no")

    monkeypatch.setattr(invokers, "build_invoker", boom)
    (job,) = tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=print,
                               mode="background", measure=lambda *a: None)
    assert job.result(10) is None and "nvrtc says no" in caplog.text


def test_a_specialisation_cut_by_the_process_exit_is_no_warning(fakes, monkeypatch, caplog):
    """A short script's exit stops a background job (Python refuses new pools and exit hooks then): logged as info,
    not as a failed specialisation."""
    import logging

    _prep(P, "ConvImplicitGemmFwd", "background")

    def exiting(kernels):
        raise RuntimeError("can't register atexit after shutdown")

    monkeypatch.setattr(tiered, "_compile_apart", exiting)
    caplog.set_level(logging.INFO, logger="miofind")
    (job,) = tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=print,
                               mode="background", measure=lambda *a: None)
    assert job.result(10) is None
    assert "the process is exiting" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_env_specialize(monkeypatch):
    monkeypatch.delenv("MIOFIND_SPECIALIZE", raising=False)
    assert env.specialize() == "background"
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "SYNC")
    assert env.specialize() == "sync"
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "later")
    with pytest.raises(ValueError, match="MIOFIND_SPECIALIZE='later'"):
        env.specialize()


def test_the_record_names_the_build_measured(fakes, tmp_db, monkeypatch):
    """find.store_solutions files a generic measurement as build='generic'; the background
    specialisation that replaces it as 'specialized'."""
    import miofind.find as find
    from miofind.db import FindDB
    from miofind.device import DeviceInfo

    dev = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
    _prep(P, "ConvImplicitGemmFwd", "background")
    assert tiered.measured_build(P, "ConvImplicitGemmFwd") == "generic"
    db = FindDB(tmp_db)
    gen = _gen_solution(P, "ConvImplicitGemmFwd", 1.0)
    find.store_solutions(db, dev, P, [gen])
    assert [r.build for r in db.lookup(dev.db_name, P.key())] == ["generic"]
    meas = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 0.5, 0, sol.config, True, p)  # noqa: E731
    (job,) = tiered.after_find(P, [gen], store=lambda s: find.store_solutions(db, dev, P, [s]), mode="background",
                               measure=meas)
    job.result(10)
    (r,) = db.lookup(dev.db_name, P.key())
    assert r.build == "specialized" and r.time_ms == 0.5


def test_run_invoker_prefers_ready_then_compiled_then_generic(fakes, monkeypatch):
    from miofind.invokers import config_key

    cfg = get_solver("ConvImplicitGemmFwd").default_config(P)
    sw = tiered.run_invoker(P, "ConvImplicitGemmFwd", cfg)[0]
    tiered.wait(10)
    # background: the generic build, and it stays so when the specialised build did not compile
    assert isinstance(sw, tiered.Switching) and sw.current == "GEN" and sw.specialised is None
    assert sw.job is not None and sw.job.done()      # the compile job a graph capture would wait for
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "off")
    assert tiered.run_invoker(P, "ConvImplicitGemmFwd", cfg)[0] == "GEN"
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    assert tiered.run_invoker(P, "ConvImplicitGemmFwd", cfg)[0] == "SPEC"
    monkeypatch.delenv("MIOFIND_SPECIALIZE")
    monkeypatch.setattr(compile_mod, "is_compiled", lambda k: True)
    assert tiered.run_invoker(P, "ConvImplicitGemmFwd", cfg)[0] == "SPEC"
    tiered._ready[(P.network_config(), "ConvImplicitGemmFwd", config_key(cfg))] = ("READY", 0)
    assert tiered.run_invoker(P, "ConvImplicitGemmFwd", cfg) == ("READY", 0)


def test_dynamic_hybrid_counts_a_compiled_generic_build(fakes, monkeypatch):
    import miofind.find as find

    s = get_solver("ConvImplicitGemmFwd")
    generic_opts = {g.kinfo.compile_options() for g in generic.generic_kernels(
        s.get_solution(P, generic.generic_config(s, P, None))) if g}
    compiled = lambda k: k.compile_options() in generic_opts  # noqa: E731  (only the generic build is cached)
    monkeypatch.setattr(compile_mod, "is_compiled", compiled)
    monkeypatch.setattr(find, "is_compiled", compiled)
    assert find.needs_no_compilation(P, s, None)
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    assert not find.needs_no_compilation(P, s, None)
    monkeypatch.delenv("MIOFIND_SPECIALIZE")
    assert not find.needs_no_compilation(P, get_solver("GemmFwdRest"), None)


def test_a_failed_generic_build_is_not_the_solvers_failure(fakes):
    """A generic build that fails is not recorded against the solver; its specialised build is
    measured in the background and stored when it verifies, at any time."""
    from miofind.results import Failure

    _prep(P, "ConvImplicitGemmFwd", "background")
    f = Failure("ConvImplicitGemmFwd", "verify", "rel err too large")
    assert tiered.generic_failures(P, [f, Failure("GemmFwdRest", "verify", "x")]) == {"ConvImplicitGemmFwd"}
    stored = []
    meas = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 5.0, 0, sol.config, True, p)  # noqa: E731
    (job,) = tiered.after_find(P, [], [f], store=stored.append, mode="background", measure=meas)
    job.result(10)
    assert [s.time_ms for s in stored] == [5.0]
    assert tiered.generic_failures(P, [f]) == set()     # taken up by after_find


@pytest.mark.parametrize("how", ["compile", "verify"])
def test_a_specialisation_whose_generic_build_failed_records_its_own_failure(fakes, monkeypatch, how):
    """Where the generic build failed (not the solver's failure) and the specialised build fails too (a compile
    error, or no verified result), ``fail`` records it: else the solver has neither a record nor a failure and every
    later process's find measures the problem again. A failing specialisation whose generic build worked, and one
    cut by the process's exit, record nothing."""
    from miofind.results import Failure

    def boom(p, sol):
        raise compile_mod.CompileError("static assertion failed")
    if how == "compile":
        monkeypatch.setattr(invokers, "build_invoker", boom)
    unverified = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 5.0, 0, sol.config, False, p)  # noqa: E731
    f = Failure("ConvImplicitGemmFwd", "verify", "rel err too large")
    _prep(P, "ConvImplicitGemmFwd", "background")
    failed = []
    (job,) = tiered.after_find(P, [], [f], store=print, mode="background", measure=unverified,
                               fail=lambda solver, fs: failed.append((solver.id, [(x.stage, x.reason) for x in fs])))
    assert job.result(10) is None
    ((sid, [(stage, reason)]),) = failed
    assert sid == "ConvImplicitGemmFwd" and stage == how and ("static assertion" in reason if how == "compile" else
                                                               "not verified" in reason)
    tiered.clear()
    _prep(P, "ConvImplicitGemmFwd", "background")       # the generic build measured: its record stands
    (job,) = tiered.after_find(P, [_gen_solution(P, "ConvImplicitGemmFwd", 1.0)], store=print, mode="background",
                               measure=unverified, fail=lambda *a: failed.append(a))
    assert job.result(10) is None and len(failed) == 1
    monkeypatch.setattr(tiered, "_compile_apart", lambda k: (_ for _ in ()).throw(
        RuntimeError("can't register atexit after shutdown")))
    tiered.clear()
    _prep(P, "ConvImplicitGemmFwd", "background")
    (job,) = tiered.after_find(P, [], [f], store=print, mode="background", measure=unverified,
                               fail=lambda *a: failed.append(a))
    assert job.result(10) is None and len(failed) == 1


def test_a_run_switches_to_the_specialised_build_once_it_is_compiled(fakes, monkeypatch):
    compiled = []
    monkeypatch.setattr(compile_mod, "is_compiled", lambda k: bool(compiled))
    monkeypatch.setattr(tiered, "_compile_apart", lambda kernels: compiled.append(len(kernels)))
    calls = []
    monkeypatch.setattr(generic, "build_generic_invoker", lambda sol: lambda *a: calls.append("generic"))
    monkeypatch.setattr(invokers, "build_invoker", lambda p, sol: lambda *a: calls.append("specialised"))
    cfg = get_solver("ConvImplicitGemmFwd").default_config(P)
    sw, ws = tiered.run_invoker(P, "ConvImplicitGemmFwd", cfg)
    tiered.wait(10)
    assert compiled and sw.current is sw.specialised and sw.generic is not None
    sw(1, 2, 3, 0, 0)
    assert calls == ["specialised"] and ws == get_solver("ConvImplicitGemmFwd").get_solution(P, cfg).workspace_bytes


def test_switching_reads_attributes_from_the_running_build():
    class Inv:
        def __init__(self, work):
            self.private_work_bytes = work

        def __call__(self, *args):
            pass

    sw = tiered.Switching(Inv(0))
    assert sw.private_work_bytes == 0
    sw.current = Inv(64)
    assert sw.private_work_bytes == 64
    with pytest.raises(AttributeError):
        sw.no_such_attribute


PH = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC", dtype="FP16")


def test_only_a_solver_that_would_wait_for_nvrtc_is_deferrable(fakes, monkeypatch):
    hop, igemm = get_solver("ConvImplicitGemmHopperFwd"), get_solver("ConvImplicitGemmFwd")
    assert tiered.deferrable(PH, hop, None, mode="background")         # no generic build
    assert tiered.deferrable(PH, igemm, None, mode="background")       # its generic build is not compiled either
    assert not tiered.deferrable(PH, hop, None, mode="sync")
    assert not tiered.deferrable(PH, hop, None, mode="off")
    assert not tiered.deferrable(PH, get_solver("ConvCudnnFwd"), None, mode="background")   # no kernels of ours
    generic_opts = {g.kinfo.compile_options() for g in generic.generic_kernels(
        igemm.get_solution(PH, generic.generic_config(igemm, PH, None))) if g}
    monkeypatch.setattr(compile_mod, "is_compiled", lambda k: k.compile_options() in generic_opts)
    assert not tiered.deferrable(PH, igemm, None, mode="background")   # measured at once with its generic build
    assert tiered.deferrable(PH, hop, None, mode="background")
    monkeypatch.setattr(compile_mod, "is_compiled", lambda k: True)
    assert not tiered.deferrable(PH, hop, None, mode="background")


def test_defer_candidates_keeps_one_solver_measured_at_once(monkeypatch):
    import miofind.find as find

    hop, igemm = get_solver("ConvImplicitGemmHopperFwd"), get_solver("ConvImplicitGemmFwd")
    monkeypatch.setattr(tiered, "deferrable", lambda p, s, c, mode=None, memo=None: s is hop or c == "uncompiled")
    todo = [(igemm, None), (hop, None), (hop, {"BM": 128})]
    assert find.defer_candidates(PH, todo) == {hop.id: (hop, [None, {"BM": 128}])}
    assert find.defer_candidates(PH, todo, isolate=frozenset({hop.id})) == {}     # checked in a child: now
    assert find.defer_candidates(PH, [(hop, None)]) == {}                          # nothing else to measure
    # a solver is deferred with all of its configs or not at all
    assert find.defer_candidates(PH, [(igemm, None), (igemm, "uncompiled"), (hop, None)]) == {hop.id: (hop, [None])}


def test_a_deferred_solver_stores_its_fastest_verified_config_and_tells_listeners(fakes):
    hop = get_solver("ConvImplicitGemmHopperFwd")
    base = hop.default_config(PH)
    cfgs = [base, dict(base, STAGES=3), dict(base, STAGES=5)]
    times = {3: 0.4, 5: 0.2}        # STAGES=5 is fastest but fails verification

    def measure(problem, solver, sol, inv):
        t = times.get(sol.config["STAGES"], 0.9)
        return Solution(solver.id, solver.algorithm, t, 0, sol.config, sol.config["STAGES"] != 5, problem)

    stored, heard = [], []
    tiered.on_deferred(lambda p, s: heard.append((p.key(), s.time_ms)))
    (job,) = tiered.after_find(PH, [], store=stored.append, mode="background", measure=measure,
                               deferred={hop.id: (hop, cfgs)})
    best = job.result(10)
    assert best.time_ms == 0.4 and best.config["STAGES"] == 3
    assert [s.time_ms for s in stored] == [0.4]
    assert (PH.key(), 0.4) in heard
    assert tiered.ready_invoker(PH, hop.id, best.config) == ("SPEC", 0)
    # every config's kernels went to the spawned compile pool in one batch, before any measurement
    aparts = [b for b in fakes if b[0] == "apart"]
    assert len(aparts) == 1 and len(aparts[0][1]) >= 3
    tiered._listeners.clear()


def test_a_deferred_solver_with_no_verified_config_stores_nothing(fakes):
    hop = get_solver("ConvImplicitGemmHopperFwd")
    stored, heard = [], []
    tiered.on_deferred(lambda p, s: heard.append(s))
    meas = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 0.1, 0, sol.config, False, p)  # noqa: E731
    (job,) = tiered.after_find(PH, [], store=stored.append, mode="background", measure=meas,
                               deferred={hop.id: (hop, [None])})
    assert job.result(10) is None and stored == [] and heard == []
    tiered._listeners.clear()


def test_a_deferred_solvers_failures_go_to_fail(fakes, monkeypatch):
    """What the find would have recorded (a compile error, a wrong result) is handed to ``fail``."""
    hop = get_solver("ConvImplicitGemmHopperFwd")
    base = hop.default_config(PH)

    def build(p, sol):
        if sol.config["STAGES"] == 3:
            raise compile_mod.CompileError("nvrtc says no")
        return "SPEC"

    monkeypatch.setattr(invokers, "build_invoker", build)
    meas = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 0.1, 0, sol.config, False, p)  # noqa: E731
    failed = []
    (job,) = tiered.after_find(PH, [], store=print, mode="background", measure=meas,
                               deferred={hop.id: (hop, [base, dict(base, STAGES=3)])},
                               fail=lambda solver, fs: failed.append((solver.id, [(f.stage, f.config) for f in fs])))
    assert job.result(10) is None
    assert failed == [(hop.id, [("verify", base), ("compile", dict(base, STAGES=3))])]


def test_compile_apart_compiles_here_when_the_pool_takes_no_work(monkeypatch, tmp_path):
    """At interpreter exit the spawned pool refuses new work; a deferred job then compiles in its thread."""
    class Refusing:
        def map(self, fn, items):
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    done = []
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setattr(tiered, "_procs", Refusing())
    monkeypatch.setattr(tiered, "_compile_one", lambda t: done.append(t[0].name))
    import miofind.device as device
    monkeypatch.setattr(device, "current_device", lambda *a: type("D", (), {"arch": "sm_90"})())
    sol = get_solver("ConvImplicitGemmHopperFwd").get_solution(PH, None)
    tiered._compile_apart(sol.kernels)
    assert done == [k.name for k in sol.kernels]


def test_background_measurements_wait_for_finds(monkeypatch):
    """``_wait_idle`` returns once no find runs and the last ended IDLE_GRACE_S ago; at once inside a find;
    and after IDLE_MAX_WAIT_S of finds without pause."""
    import threading
    import time

    monkeypatch.setattr(tiered, "IDLE_GRACE_S", 0.1)
    tiered._wait_idle()                       # no find since long ago (or since the grace): at once
    done = {}

    def background():
        done["waited"] = tiered._wait_idle()
        done["at"] = time.monotonic()

    with tiered.foreground():
        assert tiered._wait_idle() == 0.0     # a find's own thread never waits for itself
        t = threading.Thread(target=background)
        t.start()
        time.sleep(0.2)
        assert "at" not in done               # held while the find runs
        ended = time.monotonic()
    t.join(5)
    assert done["at"] - ended >= 0.09         # ... and for the grace after it
    monkeypatch.setattr(tiered, "IDLE_MAX_WAIT_S", 0.15)
    with tiered.foreground():
        t0 = time.monotonic()
        t = threading.Thread(target=background)
        t.start()
        t.join(5)
        assert 0.14 <= done["at"] - t0 < 2.0  # a find that never ends holds it no longer than the bound


def test_background_module_loads_wait_for_finds(fakes, monkeypatch):
    """A deferred solver's job (and a specialisation's) compiles apart at once, but loads its builds
    (``build_invoker``: module loads, which block a find's launches) only once no find runs (session dec02d's call 2:
    such loads landed in the process's next finds)."""
    import threading
    import time

    monkeypatch.setattr(tiered, "IDLE_GRACE_S", 0.05)
    hop = get_solver("ConvImplicitGemmHopperFwd")
    loaded = []
    monkeypatch.setattr(invokers, "build_invoker", lambda p, sol: loaded.append(time.monotonic()) or "SPEC")

    def measure(problem, solver, sol, inv):
        return Solution(solver.id, solver.algorithm, 0.1, 0, sol.config, True, problem)

    with tiered.foreground():
        (job,) = tiered.after_find(PH, [], store=lambda s: None, mode="background", measure=measure,
                                   deferred={hop.id: (hop, [hop.default_config(PH)])})
        deadline = time.monotonic() + 5
        while not any(b[0] == "apart" for b in fakes) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(b[0] == "apart" for b in fakes)      # compiled apart while the find runs ...
        time.sleep(0.2)
        assert loaded == []                              # ... but nothing loaded
        ended = time.monotonic()
    assert job.result(10) is not None
    assert loaded and loaded[0] - ended >= 0.04         # loaded once the find and its grace were over


class _Plans:
    """A solver listing five configs (cuDNN's plans), the first ``configs_now`` measured by the find."""

    id, algorithm, family, configs_now = "ConvFakePlans", "miopenConvolutionFwdAlgoDirect", "cudnn", 2

    def __init__(self):
        self.listed = []

    def find_configs(self, problem, limit=None):
        self.listed.append(limit)
        cfgs = [{"plan": f"p{i}"} for i in range(5)]
        return cfgs[:limit] if limit else cfgs

    def get_solution(self, problem, config=None):
        from miofind.solver import ConvSolution
        return ConvSolution(self.id, [], 0, lambda kernels: "INV", config, prebuilt=True)


@pytest.mark.parametrize("best_now,stored_ms", [(0.5, 0.4), (0.35, None)])
def test_later_configs_are_measured_in_the_background_and_stored_when_faster(fakes, best_now, stored_ms):
    """The configs after the find's first ones are listed in the background job, each measured, and the
    fastest verified stored (and told to the listeners) only where it beats the find's best of the solver."""
    s = _Plans()
    times = {"p2": 0.6, "p3": 0.3, "p4": 0.4}         # p3 is fastest but fails verification
    measured = []

    def measure(problem, solver, sol, inv):
        measured.append(sol.config["plan"])
        return Solution(solver.id, solver.algorithm, times[sol.config["plan"]], 0, sol.config,
                        sol.config["plan"] != "p3", problem)

    stored, heard = [], []
    tiered.on_deferred(lambda p, sol: heard.append(sol.time_ms))
    try:
        (job,) = tiered.after_find(P, [], store=stored.append, mode="background", measure=measure,
                                   later={s.id: (s, [{"plan": "p0"}, {"plan": "p1"}], best_now)})
        job.result(10)
    finally:
        tiered._listeners.clear()
    assert s.listed == [None] and measured == ["p2", "p3", "p4"]
    assert [x.time_ms for x in stored] == ([] if stored_ms is None else [stored_ms])
    assert heard == ([] if stored_ms is None else [stored_ms])
    assert tiered.deferred_pending(P) == set()        # a normal-mode find does not leave the solver out


def test_a_deferred_solvers_configs_may_be_listed_in_the_background(fakes):
    """A solver deferred by prediction gets its configs listed by its job (a callable: listing cuDNN's plans
    builds them), once no find runs; the fastest verified one is stored, as for any deferred solver."""
    hop = get_solver("ConvImplicitGemmHopperFwd")
    base = hop.default_config(PH)
    listed = []

    def listing():
        listed.append(1)
        return [base, dict(base, STAGES=3)]

    meas = lambda p, s, sol, inv: Solution(s.id, s.algorithm, 0.3 if sol.config["STAGES"] == 3 else 0.6, 0,  # noqa: E731
                                           sol.config, True, p)
    stored = []
    (job,) = tiered.after_find(PH, [], store=stored.append, mode="background", measure=meas,
                               deferred={hop.id: (hop, listing)})
    assert job.result(10).time_ms == 0.3 and listed == [1] and [s.time_ms for s in stored] == [0.3]


def test_a_finds_solutions_are_made_once_for_its_deferral_check_and_its_preparation(fakes, monkeypatch):
    """With the find's ``Solutions``, the deferral check makes (solver, config)'s specialised and generic solutions and
    the preparation takes the same objects; a solution that raised is made again; without it each makes its own."""
    s = get_solver("ConvImplicitGemmFwd")
    made = {"specialised": 0, "generic": 0}
    real_get, real_generic = type(s).get_solution, tiered._generic_solution

    def get_solution(self, p, cfg=None, **k):
        made["specialised"] += cfg is None     # the listed (default) config; the generic build asks its own
        return real_get(self, p, cfg, **k)

    def generic_solution(p, solver, cfg):
        made["generic"] += 1
        return real_generic(p, solver, cfg)

    monkeypatch.setattr(type(s), "get_solution", get_solution)
    monkeypatch.setattr(tiered, "_generic_solution", generic_solution)
    memo = tiered.Solutions()
    assert tiered.deferrable(P, s, None, mode="background", memo=memo)     # nothing is compiled in the fakes
    sol, inv = tiered.prepare(P, s, None, memo.specialised(P, s, None), mode="background", memo=memo)
    assert made == {"specialised": 1, "generic": 1} and inv == "GEN"
    assert sol is memo.generic(P, s, None) and memo.specialised(P, s, None) is memo.specialised(P, s, None)
    tiered.prepare(P, s, None, s.get_solution(P, None), mode="background")
    assert made == {"specialised": 2, "generic": 2}
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first")
        return "ok"

    with pytest.raises(RuntimeError):
        memo._get(("x",), flaky)
    assert memo._get(("x",), flaky) == "ok" and memo._get(("x",), flaky) == "ok" and len(calls) == 2


def _fresh_exit(monkeypatch):
    """A fresh pool and exit state for a test that calls ``tiered._at_exit``."""
    import threading

    monkeypatch.setattr(tiered, "_stopping", threading.Event())
    monkeypatch.setattr(tiered, "_pool", None)
    monkeypatch.setattr(tiered, "_finish_at_exit", False)    # a CLI test's command may have set it


def _exit_jobs(monkeypatch, n_jobs, release, started=None):
    """``n_jobs`` deferred Hopper jobs (problems differing in N) of three configs each on a fresh 2-thread pool,
    each config's measurement waiting for ``release``; (jobs, stored, failed, measured)."""
    _fresh_exit(monkeypatch)
    hop = get_solver("ConvImplicitGemmHopperFwd")
    stored, failed, measured = [], [], []

    def measure(problem, solver, sol, inv):
        measured.append(problem.n)
        if started is not None:
            started.release()
        release.wait(10)
        return Solution(solver.id, solver.algorithm, 0.1 * sol.config["STAGES"], 0, sol.config, True, problem)

    jobs = []
    for n in range(1, n_jobs + 1):
        p = ProblemDescription.make("F", n=n, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                                    dtype="FP16")
        base = hop.default_config(p)
        jobs += tiered.after_find(p, [], store=stored.append, mode="background", measure=measure,
                                  deferred={hop.id: (hop, [dict(base, STAGES=s) for s in (3, 4, 5)])},
                                  fail=lambda solver, fs: failed.append(solver.id))
    return jobs, stored, failed, measured


def test_an_ending_process_stops_its_background_jobs(fakes, monkeypatch, caplog):
    """MIOFIND_EXIT_WAIT unset: at exit the queued jobs are cancelled and the running ones stop before their next
    config, storing nothing and recording no failure (the deferred marks stay for the next process)."""
    import logging
    import threading

    caplog.set_level(logging.INFO, logger="miofind")
    release, started = threading.Event(), threading.Semaphore(0)
    jobs, stored, failed, measured = _exit_jobs(monkeypatch, 3, release, started)
    for _ in range(2):      # both threads are inside their first config's measurement
        assert started.acquire(timeout=10)
    tiered._at_exit()
    release.set()
    assert jobs[2].cancelled()
    assert [j.result(10) for j in jobs[:2]] == [None, None]
    assert sorted(measured) == [1, 2] and stored == [] and failed == []
    assert "1 queued background job(s) cancelled, 2 stopping" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_exit_wait_lets_the_jobs_finish(fakes, monkeypatch):
    import threading

    monkeypatch.setenv("MIOFIND_EXIT_WAIT", "30")
    release = threading.Event()
    jobs, stored, failed, measured = _exit_jobs(monkeypatch, 3, release)
    threading.Timer(0.2, release.set).start()
    tiered._at_exit()
    assert all(j.done() and not j.cancelled() for j in jobs)
    assert sorted(s.problem.n for s in stored) == [1, 2, 3] and len(measured) == 9
    assert all(s.config["STAGES"] == 3 for s in stored)


def test_exit_wait_is_checked(monkeypatch):
    for bad in ("-1", "soon", "nan"):
        monkeypatch.setenv("MIOFIND_EXIT_WAIT", bad)
        with pytest.raises(ValueError, match="MIOFIND_EXIT_WAIT"):
            env.exit_wait()
    monkeypatch.setenv("MIOFIND_EXIT_WAIT", "inf")
    assert env.exit_wait() == float("inf")
    monkeypatch.delenv("MIOFIND_EXIT_WAIT")
    assert env.exit_wait() == 0


# a script's start: deferred Hopper jobs with building and compiling faked
_FAKED_JOBS = r'''
import os, sys, threading, time
import miofind.invokers as invokers
from miofind import tiered
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.results import Solution

invokers.build_invoker = lambda p, sol: "SPEC"
tiered._compile_apart = lambda kernels: None
hop = get_solver("ConvImplicitGemmHopperFwd")
'''

_EXITING_SCRIPT = _FAKED_JOBS + r'''
out = open(sys.argv[1], "a")

def measure(problem, solver, sol, inv):
    time.sleep(0.4)
    return Solution(solver.id, solver.algorithm, 0.1, 0, sol.config, True, problem)

for n in range(1, 5):
    p = ProblemDescription.make("F", n=n, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")
    base = hop.default_config(p)
    tiered.after_find(p, [], store=lambda s: (out.write(f"{s.problem.n}\n"), out.flush()), mode="background",
                      measure=measure, deferred={hop.id: (hop, [dict(base, STAGES=s) for s in (3, 4, 5)])})
time.sleep(0.2)     # the first two jobs are measuring
'''


@pytest.mark.parametrize("wait", [None, "inf"])
def test_a_script_that_ends_is_not_held_by_its_background_jobs(tmp_path, wait):
    """A real interpreter exit: four deferred jobs of three 0.4 s configs on two threads would hold the script 2.4 s
    (Python joins the pool's threads); stopped, it ends once the configs being measured are done. With
    MIOFIND_EXIT_WAIT=inf every job is stored."""
    import os
    import subprocess
    import sys
    import time

    script, stored = tmp_path / "s.py", tmp_path / "stored.txt"
    script.write_text(_EXITING_SCRIPT)
    e = {k: v for k, v in os.environ.items() if k != "MIOFIND_EXIT_WAIT"}
    if wait is not None:
        e["MIOFIND_EXIT_WAIT"] = wait
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(script), str(stored)], env=e, capture_output=True, text=True, timeout=60)
    took = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    lines = stored.read_text().split() if stored.exists() else []
    if wait is None:
        assert lines == [], r.stderr
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import miofind.tiered"], env=e, check=True, timeout=60)
        assert took < (time.perf_counter() - t1) + 1.5, (took, r.stderr)
    else:
        assert sorted(lines) == ["1", "2", "3", "4"], r.stderr


def test_the_exit_hook_runs_before_the_job_pools_own():
    """Once a job is queued, the compile pool's module is imported (not in a job at exit) and tiered's exit hook is
    registered after the thread pool's, so it runs first (threading runs them in reverse): else that hook would join
    the job threads, running every queued job, before ours could cancel them. The compile pool is miofind.procpool's,
    not a multiprocessing one (whose workers would run the caller's script again)."""
    import subprocess
    import sys

    code = ("import sys, threading\nfrom miofind import tiered\n"
            "assert 'miofind.procpool' not in sys.modules\n"
            "tiered._executor()\nimport concurrent.futures.thread as cft\n"
            "assert 'miofind.procpool' in sys.modules and 'concurrent.futures.process' not in sys.modules\n"
            "hooks = [getattr(h, 'func', h) for h in threading._threading_atexits]\n"
            "ours = max(i for i, h in enumerate(hooks) if h is tiered._at_exit)\n"
            "print(ours > hooks.index(cft._python_exit))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_a_measurement_the_exit_cuts_short_records_no_failure(fakes, monkeypatch):
    """A specialisation whose generic build failed records its own failure when unverified, but not when the process
    stopped its jobs while it measured: the exit may have broken the measurement."""
    import threading

    from miofind.results import Failure

    _fresh_exit(monkeypatch)
    inside, release = threading.Event(), threading.Event()

    def cut(p, s, sol, inv):
        inside.set()
        release.wait(10)
        return None
    f = Failure("ConvImplicitGemmFwd", "verify", "rel err too large")
    _prep(P, "ConvImplicitGemmFwd", "background")
    failed = []
    (job,) = tiered.after_find(P, [], [f], store=print, mode="background", measure=cut,
                               fail=lambda *a: failed.append(a))
    assert inside.wait(10)
    tiered._at_exit()
    release.set()
    assert job.result(10) is None and failed == []


_FORKING_SCRIPT = _FAKED_JOBS + r'''
release = threading.Event()
p = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                            dtype="FP16")
meas = lambda pr, s, sol, inv: release.wait(30) and Solution(s.id, s.algorithm, 0.1, 0, sol.config, True, pr)
tiered.after_find(p, [], store=print, mode="background", measure=meas, deferred={hop.id: (hop, [None])})
time.sleep(0.2)
pid = os.fork()
if pid == 0:    # a forked worker (a DataLoader's): the futures are the parent's, their threads are not here
    os.environ["MIOFIND_EXIT_WAIT"] = "inf"
    t0 = time.perf_counter()
    tiered._at_exit()
    print(f"child {time.perf_counter() - t0:.2f}", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent pending", tiered.pending(), flush=True)
release.set()
'''


def test_a_forked_child_does_not_wait_for_its_parents_jobs(tmp_path):
    """A forked child inherits the parent's pending futures without the threads that would finish them: its exit hook
    leaves them alone, where MIOFIND_EXIT_WAIT=inf would wait for ever."""
    import subprocess
    import sys

    script = tmp_path / "f.py"
    script.write_text(_FORKING_SCRIPT)
    r = subprocess.run([sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    child = next(ln for ln in lines if ln.startswith("child "))
    assert float(child.split()[1]) < 5, r.stdout
    assert "parent pending 1" in r.stdout     # the parent's job was not cancelled by the child
