"""Tiered find: on a miss, measure generic builds at once and specialise in the background.

A find candidate whose specialised kernels are not compiled yet, and whose solution has a generic
build (``miofind.generic``), is measured with the generic build: no NVRTC wait when the generic
cubin is in the binary cache (``miofind warmup``). ``MIOFIND_SPECIALIZE`` decides what happens to
the specialised build:

- ``background`` (default): it is compiled in worker processes (``miofind.procpool``: CuPy's NVRTC holds the GIL),
  then verified and timed against the float64 reference; when it is verified and faster than the
  generic measurement its record replaces the generic one in the user FindDB and its invoker is
  what ``ready_invoker`` returns from then on;
- ``sync``: find compiles and measures the specialised build, as before generic builds existed;
- ``off``: generic builds only.

A candidate that would wait for NVRTC however it is measured (its specialised kernels are not
compiled, and it has no generic build, as the Hopper family, whose wgmma tiles and TMA boxes are
compile-time, or its generic build is not in the binary cache either) is **deferred** in
``background`` mode when the find measures another solver at once (``deferrable``,
``find.benchmark``): its specialised kernels compile in the spawned pool, then all its configs are
verified and timed, and its fastest verified one is stored in the user FindDB (``after_find``).
Functions registered with ``on_deferred`` hear of each stored one, so that a caller holding the
find's answer (``miofind.torch``) can switch to it when it is faster.

The record of a generic measurement carries the solver's usual trust key (the same kernel source,
compiled with the sizes read at run time).

A process that ends gives its jobs ``MIOFIND_EXIT_WAIT`` seconds (default 0), then stops them (``_at_exit``): the
queued ones are cancelled and the running ones return at their next step, storing nothing. A deferred solver keeps its
mark in the user FindDB, so the next process measures it (``find.resume_deferred``). Python would otherwise join the
pool's threads at exit, running every queued job to its end with NVRTC in the thread. ``finish_at_exit`` (the CLI,
``miofind worker``) waits for every job instead.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import wait as _wait_futures

from . import env, generic
from .compile import compile_into_cache as _compile_one   # a worker's call; errors surface in build_invoker
from .nvlib import relaxed_capture_mode
from .solver import ConvSolution

log = logging.getLogger(__name__)

__all__ = ["prepare", "generic_compiled", "deferrable", "after_find", "deferred_pending", "on_deferred", "measured_build",
           "ready_invoker", "run_invoker", "Switching", "pending", "wait", "clear", "foreground"]

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_pending: dict[tuple, Future] = {}     # (problem key, solver id, config key) -> background job
_ready: dict[tuple, tuple] = {}        # (network config, solver id, config key) -> (invoker, workspace bytes)
# (problem key, solver id) -> (solver, the last config measured, {its generic build's config key: config as listed})
_generic_measured: dict[tuple, tuple] = {}
_listeners: list = []                  # on_deferred's callables


def _key(problem, solver_id, config) -> tuple:
    from .invokers import config_key
    return problem.key(), solver_id, config_key(config)


class Solutions:
    """A find's memo of its candidates' solutions (``find.benchmark`` makes one a find): (solver, config)'s specialised
    ``get_solution`` and its generic build's (``_generic_solution``), each made once, by the deferral check
    (``deferrable``) and then reused by the preparation (``prepare``). Thread-safe; a solution that raised is not kept."""

    def __init__(self) -> None:
        self._made: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def _get(self, key: tuple, make):
        with self._lock:
            if key in self._made:
                return self._made[key]
        got = make()
        with self._lock:
            return self._made.setdefault(key, got)

    def specialised(self, problem, solver, config) -> ConvSolution:
        from .invokers import config_key
        return self._get(("specialised", solver.id, config_key(config)), lambda: solver.get_solution(problem, config))

    def generic(self, problem, solver, config) -> ConvSolution | None:
        from .invokers import config_key
        return self._get(("generic", solver.id, config_key(config)), lambda: _generic_solution(problem, solver, config))


def prepare(problem, solver, config, sol: ConvSolution, *, mode: str | None = None, memo: Solutions | None = None):
    """(ConvSolution, invoker) a find measures for (solver, config): the generic build when the
    mode allows it, the solution has one and its specialised kernels are not compiled; else the
    specialised ``sol`` compiled (``invokers.build_invoker``). Raises what compiling raises. ``memo``: the find's
    ``Solutions`` (None: one of this call's own)."""
    from .compile import is_compiled
    from .invokers import build_invoker

    mode = mode or env.specialize()
    if mode != "sync" and not all(is_compiled(k) for k in sol.kernels):
        gsol = (memo or Solutions()).generic(problem, solver, config)
        if gsol is not None:
            inv = generic.build_generic_invoker(gsol)
            with _lock:
                k = (problem.key(), solver.id)
                listed = _generic_measured[k][2] if k in _generic_measured else {}
                listed[_key(problem, solver.id, gsol.config)[2]] = config     # the build's config -> as listed
                _generic_measured[k] = (solver, config, listed)
            return gsol, inv
    return sol, build_invoker(problem, sol)


def generic_compiled(problem, solver, config, *, memo: Solutions | None = None) -> bool:
    """Whether a find (not in ``sync`` mode) could measure ``solver``'s generic build for ``problem``
    without compiling: it has one and its kernels are in the binary cache (dynamic_hybrid mode). ``memo``: the find's
    ``Solutions`` (None: one of this call's own)."""
    from .compile import is_compiled

    if env.specialize() == "sync":
        return False
    gsol = (memo or Solutions()).generic(problem, solver, config)
    gks = generic.generic_kernels(gsol) if gsol is not None else None
    return gks is not None and all(is_compiled(g.kinfo if g is not None else k) for g, k in zip(gks, gsol.kernels))


def deferrable(problem, solver, config, *, mode: str | None = None, memo: Solutions | None = None) -> bool:
    """Whether a find may defer (solver, config) to the background (``background`` mode only): its
    specialised kernels are not compiled and it has no generic build in the binary cache, so measuring
    it now would wait for NVRTC. CPU only (the binary cache's files), launches nothing. ``memo``: the find's
    ``Solutions``, which keeps the solutions made here for its preparation (None: one of this call's own)."""
    from .compile import is_compiled

    if (mode or env.specialize()) != "background":
        return False
    memo = memo or Solutions()
    try:
        sol = memo.specialised(problem, solver, config)
        if not sol.kernels or all(is_compiled(k) for k in sol.kernels):
            return False
        return not generic_compiled(problem, solver, config, memo=memo)
    except Exception:       # noqa: BLE001  the find reports it when it prepares the candidate
        return False


def deferred_pending(problem) -> set[str]:
    """The solvers of ``problem`` whose deferred job (``after_find``) is still running in this process."""
    key = problem.key()
    with _lock:
        return {k[2] for k, f in _pending.items() if k[0] == "deferred" and k[1] == key and not f.done()}


def on_deferred(fn) -> None:
    """Call ``fn(problem, solution)`` (from a background thread) each time a deferred solver's fastest
    verified config has been stored: a ``miofind.results.Solution`` of ``problem``."""
    with _lock:
        if fn not in _listeners:
            _listeners.append(fn)


def _generic_solution(problem, solver, config) -> ConvSolution | None:
    try:
        gsol = solver.get_solution(problem, generic.generic_config(solver, problem, config))
    except Exception as e:      # the rounded config does not validate: no generic build
        log.debug("no generic build of %s for %s: %s", solver.id, problem.key(), e)
        return None
    return gsol if generic.generic_kernels(gsol) is not None else None


def generic_failures(problem, failures) -> set[str]:
    """The solvers among ``failures`` that failed while this process's find measured their generic
    build: not recorded as the solver's failure (``after_find`` tries the specialised build)."""
    with _lock:
        return {f.solver_id for f in failures if (problem.key(), f.solver_id) in _generic_measured}


# -- the GPU for finds first ---------------------------------------------------------------------

# A background measurement starts once no find has run for this long (a model's first step finds layer
# after layer, a few milliseconds apart) ...
IDLE_GRACE_S = 0.25
# ... or once it has waited this long (a process that finds without pause still gets its background work)
IDLE_MAX_WAIT_S = 20.0
_fg = threading.Condition()
_fg_state = {"active": 0, "last": 0.0}
_fg_local = threading.local()


@contextlib.contextmanager
def foreground():
    """Mark a find: background measurements (``_measure``) wait while one runs and for IDLE_GRACE_S after
    the last ended, so that the work a model's first step leaves to the background does not slow that
    step's own finds (it would hold the GPU, and ``harness.TIMING_LOCK``, between them)."""
    _fg_local.depth = getattr(_fg_local, "depth", 0) + 1
    with _fg:
        _fg_state["active"] += 1
    try:
        yield
    finally:
        _fg_local.depth -= 1
        with _fg:
            _fg_state["active"] -= 1
            _fg_state["last"] = time.monotonic()
            _fg.notify_all()


def _wait_idle() -> float:
    """Wait until no find runs and the last ended IDLE_GRACE_S ago, at most IDLE_MAX_WAIT_S; the seconds
    waited. At once in a thread that is inside a find itself."""
    if getattr(_fg_local, "depth", 0):
        return 0.0
    t0 = time.monotonic()
    deadline = t0 + IDLE_MAX_WAIT_S
    with _fg:
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if _fg_state["active"]:
                _fg.wait(deadline - now)
                continue
            left = _fg_state["last"] + IDLE_GRACE_S - now
            if left <= 0:
                break
            _fg.wait(min(left, deadline - now))
    return time.monotonic() - t0


def after_find(problem, sols, failures=(), *, store, mode: str | None = None, measure=None,
               budget_ms: float | None = None, deferred=None, fail=None, later=None) -> list[Future]:
    """After a find measured ``sols`` (and ``failures``): for each measured with a generic build, in
    ``background`` mode, compile its specialised build in the background (a thread driving the
    spawned compile pool), measure it (``measure(problem, solver, ConvSolution, invoker)`` ->
    Solution, default the find's harness under ``budget_ms``) and, when verified and faster than the
    generic build (or the generic build failed), ``store(solution)`` it and make its invoker the one
    ``ready_invoker`` gives; where the generic build failed and the specialised one fails too, ``fail(solver,
    [Failure])`` (recorded, as the find records its own failures: else every later find measures it again).
    ``deferred``: {solver id: (solver, [configs], or a callable listing them once no
    find runs)} the find left to the background (``deferrable``, or predicted clearly slower): each solver's
    configs compiled and measured, its fastest verified one stored and told to the ``on_deferred`` listeners;
    where none verified, ``fail(solver, [Failure])`` (the find records them, as it records its own). ``later``: {solver id: (solver, [configs measured],
    the find's best time of the solver)} for the solvers the find measured only the first configs of
    (``Solver.configs_now``): their other find configs are listed and measured once no find runs, and the
    fastest verified one is stored and told to the listeners where it beats that time. Returns the jobs."""
    mode = mode or env.specialize()
    jobs = []
    work = [("deferred", sid, solver, configs if callable(configs) else list(configs), fail, math.inf)
            for sid, (solver, configs) in (deferred or {}).items()]
    work += [("later", sid, solver, config_listing(problem, solver, measured), None, best_ms)
             for sid, (solver, measured, best_ms) in (later or {}).items()]
    for kind, sid, solver, configs, on_fail, best_ms in work:
        k = (kind, problem.key(), sid)
        with _lock:
            if k in _pending and not _pending[k].done():
                continue
            box: dict = {}      # the job's harness, shared by its configs
            meas = measure or (lambda p, sv, sol, inv, box=box: _measure(p, sv, sol, inv, budget_ms, box))
            _pending[k] = fut = _executor().submit(_measure_deferred, problem, solver, configs, store, meas,
                                                   _device(), on_fail, box, best_ms, kind)
        jobs.append(fut)
    measured = [(s.solver_id, s) for s in sols] + [(f.solver_id, None) for f in failures]
    for sid, s in measured:
        with _lock:
            entry = _generic_measured.pop((problem.key(), sid), None)
        if entry is None or mode != "background":
            continue
        # a solver whose several configs the find measured (generic builds each) specialises the one it kept
        solver, config, listed = entry
        if s is not None:
            config = listed.get(_key(problem, sid, s.config)[2], config)
        k = _key(problem, solver.id, config)
        ex = _executor()
        with _lock:
            if k in _pending:
                continue
            meas = measure or (lambda p, sv, sol, inv: _measure(p, sv, sol, inv, budget_ms))
            _pending[k] = fut = ex.submit(_specialise, problem, solver, config, s, store, meas, _device(),
                                          fail if s is None else None)
        jobs.append(fut)
    return jobs


_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None:
            # the compile pool's module now, not in a job at exit
            from . import procpool   # noqa: F401
            _register_exit_hook()
            _pool_pid = os.getpid()
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="miofind-specialize",
                                       initializer=relaxed_capture_mode)
    return _pool


class _Noop:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _device():
    try:
        from .device import runtime
        return runtime().getDevice()
    except Exception:
        return None


def _specialise(problem, solver, config, generic_sol, store, measure, device, fail=None):
    """The background job: compile, measure, replace when faster (or when ``generic_sol`` is None:
    the generic build failed; where the specialised build fails too, ``fail(solver, [Failure])`` records it, as
    the find records its own failures, so that later finds do not measure the solver again). Returns the stored
    Solution or None."""
    from .compile import CompileError
    from .harness import describe, failure_stage
    from .invokers import build_invoker
    from .results import Failure

    def failed(stage, reason):
        if fail is not None and generic_sol is None:
            try:
                fail(solver, [Failure(solver.id, stage, reason, config=config)])
            except Exception as e:      # noqa: BLE001  the record is lost, the find goes on
                log.warning("specialised %s for %s: its failure not recorded: %s", solver.id, problem.key(), e)

    try:
        ctx = _on_device(device)
        with ctx, _own_stream():
            _check_stop()
            sol = solver.get_solution(problem, config)
            _compile_apart(sol.kernels)
            _check_stop()
            _wait_idle()    # the module loads block a find's launches: not while one runs (as the measurement)
            inv = build_invoker(problem, sol)
            spec = measure(problem, solver, sol, inv)
            _check_stop()   # a measurement the exit cut short is no verdict
        gen_ms = generic_sol.time_ms if generic_sol is not None else math.inf
        if spec is None or not spec.verified or spec.time_ms >= gen_ms:
            log.info("specialised %s for %s: %s", solver.id, problem.key(),
                     "not verified" if spec is None or not spec.verified else
                     f"{spec.time_ms:.4f} ms, not faster than the generic build's {gen_ms:.4f} ms")
            if spec is None or not spec.verified:
                failed("verify", "not verified against the float64 reference")
            return None
        with _lock:
            _ready[(problem.network_config(), solver.id, _key(problem, solver.id, config)[2])] = (inv, sol.workspace_bytes)
        store(spec)
        log.info("specialised %s for %s: %.4f ms replaces the generic build's %s", solver.id, problem.key(),
                 spec.time_ms, f"{gen_ms:.4f} ms" if generic_sol is not None else "failure")
        return spec
    except Exception as e:
        if _exiting(e):     # the process ends while the job runs: the next process's find specialises it
            log.info("specialising %s for %s stopped: the process is exiting", solver.id, problem.key())
        else:
            log.warning("specialising %s for %s failed: %s", solver.id, problem.key(), e)
            failed(*(("compile", describe(e)) if isinstance(e, CompileError) else failure_stage(e)))
        return None


def _exiting(e: BaseException) -> bool:
    """Whether ``e`` comes from the process ending under a background job: the jobs were stopped (``_at_exit``; a
    cancelled compile), or Python refuses new threads, pools or exit hooks because the interpreter is shutting down."""
    return _stopping.is_set() or isinstance(e, CancelledError) or \
        (isinstance(e, RuntimeError) and ("after shutdown" in str(e) or "interpreter shutdown" in str(e)))


class _Stopped(Exception):
    """Raised inside a background job when the process stops its jobs (``_at_exit``)."""


def _check_stop() -> None:
    if _stopping.is_set():
        raise _Stopped("the process is exiting")


def config_listing(problem, solver, measured=()):
    """A callable listing ``solver``'s find configs of ``problem`` other than ``measured`` (run in the
    background job: listing cuDNN's plans builds them)."""
    from .invokers import config_key

    done = {config_key(c) for c in measured}
    return lambda: [c for c in solver.find_configs(problem) if config_key(c) not in done]


def _measure_deferred(problem, solver, configs, store, measure, device, fail=None, box=None, best_ms=math.inf,
                      kind: str = "deferred"):
    """The background job of a deferred solver, or of a solver's later configs: compile every config's
    kernels (spawned pool), verify and time each, store the fastest verified one where it beats
    ``best_ms`` and tell the listeners; where none verified, ``fail`` its failures. ``configs`` is a list,
    or a callable giving it once no find runs. ``box`` (the job's harness) is emptied at the end; ``kind``
    ("deferred" or "later") names the job in the log. Returns the stored Solution, or None."""
    from .compile import CompileError
    from .harness import describe, failure_stage
    from .invokers import build_invoker
    from .results import Failure

    failures = []
    what = "later configs of" if kind == "later" else "deferred"
    try:
        ctx = _on_device(device)
        with ctx, _own_stream():
            _check_stop()
            if callable(configs):
                _wait_idle()
                configs = configs()
            built = []
            for cfg in configs:
                try:
                    built.append((cfg, solver.get_solution(problem, cfg)))
                except Exception as e:      # noqa: BLE001  an invalid config: the others go on
                    failures.append(Failure(solver.id, "solution", describe(e), config=cfg))
            _compile_apart([k for _, sol in built for k in sol.kernels])
            best = None
            for cfg, sol in built:
                _check_stop()       # outside the try: a stopped job records no failure
                try:
                    _wait_idle()    # the module loads block a find's launches: not while one runs
                    inv = build_invoker(problem, sol)
                    m = measure(problem, solver, sol, inv)
                    _check_stop()   # a measurement the exit cut short is no verdict
                except Exception as e:      # noqa: BLE001  a failed config is not stored
                    _check_stop()
                    stage, reason = ("compile", describe(e)) if isinstance(e, CompileError) else failure_stage(e)
                    failures.append(Failure(solver.id, stage, reason, config=cfg))
                    log.info("%s %s for %s: config %s failed at %s: %s", what, solver.id, problem.key(), cfg, stage,
                             reason.splitlines()[0] if reason else "")
                    continue
                if m is None or not m.verified:
                    failures.append(Failure(solver.id, "verify", "not verified against the float64 reference",
                                            config=cfg))
                elif best is None or m.time_ms < best[0].time_ms:
                    best = (m, cfg, inv, sol.workspace_bytes)
        if best is None:
            log.info("%s %s for %s: no config verified", what, solver.id, problem.key())
            if fail is not None and failures:
                fail(solver, failures)
            return None
        spec, cfg, inv, ws = best
        if spec.time_ms >= best_ms:
            log.info("%s %s for %s: %.4f ms, not faster than the find's %.4f ms", what, solver.id, problem.key(),
                     spec.time_ms, best_ms)
            return None
        with _lock:     # under the config as listed and as resolved (the Solution's, which prepare() asks for)
            for c in (cfg, spec.config):
                _ready[(problem.network_config(), solver.id, _key(problem, solver.id, c)[2])] = (inv, ws)
        store(spec)
        log.info("%s %s for %s: %.4f ms stored", what, solver.id, problem.key(), spec.time_ms)
        with _lock:
            listeners = list(_listeners)
        for fn in listeners:
            try:
                fn(problem, spec)
            except Exception as e:      # noqa: BLE001  a listener's failure is its own
                log.warning("deferred %s for %s: listener %r failed: %s", solver.id, problem.key(), fn, e)
        return spec
    except Exception as e:      # noqa: BLE001
        if _exiting(e):     # its deferred mark stays: the next process measures it
            log.info("%s %s for %s stopped: the process is exiting", what, solver.id, problem.key())
        else:
            log.warning("%s %s for %s failed: %s", what, solver.id, problem.key(), e)
        return None
    finally:
        if box is not None:
            box.clear()


_procs = None


def _shutdown_procs() -> None:
    global _procs
    if _procs is not None:
        _procs.shutdown(wait=True, cancel_futures=True)
        _procs = None


def _compile_apart(kernels) -> None:
    """Compile into the binary cache in worker processes (``miofind.procpool``; they never touch this process's CUDA
    context): CuPy's NVRTC binding holds the GIL while it compiles, which would stall the caller's
    threads for the whole compile."""
    global _procs
    from .compile import binary_key, cached_cubin, private_cache_dir
    from .device import current_device

    if not kernels or _stopping.is_set():
        return
    arch = current_device().arch
    cache = private_cache_dir()
    todo = [(k, arch, str(cache / f"{binary_key(k, arch)}.cubin")) for k in kernels]
    todo = [t for t in todo if cached_cubin(cache / f"{binary_key(t[0], arch)}.cubin") is None]
    if not todo:
        return
    try:
        with _pool_lock:
            if _procs is None:
                from multiprocessing import util

                from .compile import lower_priority
                from .env import compile_nice
                from .procpool import ProcPool

                # the workers end with this process, after their compiles under way (as miofind.tuning.precompile)
                util.Finalize(None, _shutdown_procs, exitpriority=100)
                # below the training step's or the find's own thread, which launch and time the kernels; workers
                # that never run the caller's script (miofind.procpool), as a spawned multiprocessing pool would
                _procs = ProcPool(2, initializer=lower_priority, initargs=(compile_nice(),))
            procs = _procs
        list(procs.map(_compile_one, todo))
    except (RuntimeError, CancelledError):
        # the pool was shut down (the interpreter is exiting: the jobs were stopped) or broke: compiled here, unless
        # stopped
        for t in todo:
            if _stopping.is_set():
                return
            _compile_one(t)


def _own_stream():
    """A new non-blocking CuPy stream as the background job's current one: its inputs, runs and events
    never touch the legacy default stream, which would wait on (and break the capture of) a blocking
    stream another thread captures."""
    try:
        import cupy
        return cupy.cuda.Stream(non_blocking=True)
    except Exception:
        return _Noop()


def _on_device(device):
    if device is None:
        return _Noop()
    import cupy
    return cupy.cuda.Device(device)


def _measure(problem, solver, sol, inv, budget_ms, box: dict | None = None):
    """Verify and time a build as the find does (miofind.harness), once no find runs (``_wait_idle``); a
    Solution. ``box``, a dict, keeps the harness (inputs and float64 reference) for the job's next
    configs."""
    from .harness import TIMING_LOCK, Harness, reference_invoker_for
    from .results import Solution

    h = None if box is None else box.get("harness")
    if h is None:
        _wait_idle()    # the reference's module load, as the harness's GPU work, not while a find runs
        ref = reference_invoker_for(problem)
        _wait_idle()
        with TIMING_LOCK:       # the float64 reference is GPU work: never beside a find's timing
            h = Harness(problem, verify=True, reference_invoker=ref)
        if box is not None:
            box["harness"] = h
    try:
        _wait_idle()
        m = h.measure(inv, h.workspace(sol.workspace_bytes), solver.family, 3, 10, budget_ms)
    finally:
        h.release()
    return Solution(solver.id, solver.algorithm, m.time_ms, sol.workspace_bytes, sol.config, True, problem,
                    max_error=m.max_error, time_q20_ms=m.q20_ms, time_q80_ms=m.q80_ms)


def measured_build(problem, solver_id: str) -> str:
    """'generic' when this process's find of ``problem`` measured ``solver_id`` with a generic build
    (until ``after_find`` takes it up), else 'specialized': the FindDB record's ``build``."""
    with _lock:
        return "generic" if (problem.key(), solver_id) in _generic_measured else "specialized"


def ready_invoker(problem, solver_id: str, config=None):
    """(invoker, workspace bytes) of a specialised build that replaced a generic one in this
    process, or None (``invokers.get_invoker`` may consult it)."""
    from .invokers import config_key
    return _ready.get((problem.network_config(), solver_id, config_key(config)))


def run_invoker(problem, solver_id: str, config=None):
    """(invoker, workspace bytes) to run a solution without waiting for NVRTC where possible: the
    specialised build that replaced a generic one, else the specialised build when its kernels are
    compiled (or the mode is ``sync``, or it has no generic build), else its generic build. A hook
    for ``invokers.get_invoker``, which caches the result per (network config, solver, config)."""
    from .compile import is_compiled
    from .invokers import build_invoker
    from .registry import get_solver

    ready = ready_invoker(problem, solver_id, config)
    if ready is not None:
        return ready
    solver = get_solver(solver_id)
    sol = solver.get_solution(problem, config)
    mode = env.specialize()
    if mode != "sync" and not all(is_compiled(k) for k in sol.kernels) \
            and generic.generic_kernels(sol) is not None:
        inv = generic.build_generic_invoker(sol)
        if mode != "background":
            return inv, sol.workspace_bytes
        # the specialised kernels compile in the spawned pool; once they are in the binary cache the
        # invoker switches to them (same solution and config: same workspace and results)
        sw = Switching(inv)
        with _lock:
            k = ("run",) + _key(problem, solver_id, config)
            _pending[k] = sw.job = _executor().submit(_switch_when_compiled, sw, problem, sol, _device())
        return sw, sol.workspace_bytes
    return build_invoker(problem, sol), sol.workspace_bytes


class Switching:
    """An invoker that runs a solution's generic build until its specialised build is compiled, then
    the specialised one. The generic invoker stays referenced, so that a CUDA graph captured with its
    kernels keeps them loaded. ``job``: the background compile's future (done once it switched or gave up),
    which a caller about to capture a CUDA graph waits for (``miofind.torch.settle``)."""

    __slots__ = ("current", "generic", "specialised", "job")

    def __init__(self, generic_invoker) -> None:
        self.current = self.generic = generic_invoker
        self.specialised = None
        self.job = None

    def __call__(self, a, b, out, workspace, stream) -> None:
        self.current(a, b, out, workspace, stream)

    def __getattr__(self, name):
        # what callers read from an invoker (its plans, private work size) comes from the running build
        if name in Switching.__slots__:
            raise AttributeError(name)
        return getattr(self.current, name)


def _switch_when_compiled(sw: Switching, problem, sol: ConvSolution, device) -> None:
    from .compile import is_compiled
    from .invokers import build_invoker

    try:
        _compile_apart([k for k in sol.kernels if not is_compiled(k)])
        if _stopping.is_set():
            return
        if not all(is_compiled(k) for k in sol.kernels):
            log.info("tiered: the specialised build of %s for %s did not compile; its generic build stays",
                     sol.solver_id, problem.key())
            return
        _wait_idle()    # the module loads block a find's launches: not while one runs
        with _on_device(device):
            sw.specialised = build_invoker(problem, sol)     # loads the cached cubins, compiles nothing
        sw.current = sw.specialised
    except Exception as e:      # noqa: BLE001  the generic build keeps running
        log.warning("tiered: switching %s for %s to its specialised build failed (%s: %s); its generic build "
                    "stays", sol.solver_id, problem.key(), type(e).__name__, e)


def _install() -> None:
    from .invokers import set_run_builder
    set_run_builder(run_invoker)


def pending() -> int:
    """How many background specialisations are still running."""
    with _lock:
        return sum(1 for f in _pending.values() if not f.done())


def wait(timeout: float | None = None) -> None:
    """Wait for every background specialisation (tests, and a process about to exit)."""
    with _lock:
        futs = list(_pending.values())
    for f in futs:
        if not f.cancelled():   # cancelled: stopped at exit (_at_exit)
            f.result(timeout)


def finish_at_exit() -> None:
    """Have this process wait for every background job when it ends, whatever ``MIOFIND_EXIT_WAIT`` says (a process
    that exists to fill the FindDB: the CLI, ``miofind worker``)."""
    global _finish_at_exit
    _finish_at_exit = True


_finish_at_exit = False
_stopping = threading.Event()
_pool_pid = None       # the process whose pool runs the jobs: a forked child inherits their futures, not the threads


def _at_exit() -> None:
    """Interpreter shutdown (threading's exit hooks, which run before Python joins the pools' threads): wait for the
    jobs up to ``MIOFIND_EXIT_WAIT`` seconds, then cancel the queued ones (compiles included) and have the running ones
    stop at their next step."""
    if _stopping.is_set() or _pool_pid != os.getpid():
        return
    try:
        grace = math.inf if _finish_at_exit else env.exit_wait()
    except ValueError as e:
        log.warning("%s; the background jobs are stopped at once", e)
        grace = 0.0
    with _lock:
        futs = [f for f in _pending.values() if not f.done()]
    if futs and grace > 0:
        log.info("waiting up to %s s for %d background job(s)", grace, len(futs))
        _wait_futures(futs, timeout=None if math.isinf(grace) else grace)
    _stopping.set()
    with _lock:
        futs = [f for f in _pending.values() if not f.done()]
    stopped = sum(1 for f in futs if f.cancel())
    if futs:
        log.info("exiting: %d queued background job(s) cancelled, %d stopping at their next step "
                 "(MIOFIND_EXIT_WAIT)", stopped, len(futs) - stopped)
    for pool in (_pool, _procs):
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _register_exit_hook() -> None:
    try:
        threading._register_atexit(_at_exit)    # what concurrent.futures registers its own exit hooks with
    except (AttributeError, RuntimeError):      # another Python, or already shutting down
        pass


def clear() -> None:
    """Forget pending jobs' bookkeeping and ready invokers (the jobs themselves run on)."""
    with _lock:
        _pending.clear()
        _ready.clear()
        _generic_measured.clear()


_install()
