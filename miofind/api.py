"""find_solutions / get_solutions / run_solution: the public API.

A find checks applicability, compiles every candidate in parallel threads, runs each on fresh
random inputs with a poisoned output, verifies it against the float64 naive reference, times it
with CUDA events (median after warm-ups, with 20/80% quantiles), sorts, and stores the results in
the user FindDB. Tunable solvers run their tuned config from the PerfDB when it holds a trusted,
valid one (else their default). Find modes (MIOpen's, REFERENCE.md section 4) decide when the
FindDBs (user over system) answer instead:

- ``normal``: from the DB when every candidate has a trusted record, else benchmark all;
- ``fast``: from the DB when any candidate has a trusted record, else an immediate prediction
  (``get_solutions``); never benchmarks;
- ``hybrid``: from the DB when any candidate has a trusted record, else benchmark all;
- ``dynamic_hybrid``: as hybrid, but a miss benchmarks only the candidates that need no new
  compilation (library-only solutions, or kernels in the binary cache); a prediction if none;
- ``benchmark``: always benchmark.
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import __version__
from .compile import compile_kernel, is_compiled, source_hash
from .db import FindDB, FindDBWarning, Record, is_trusted
from .db.system import Overlay, open_system_db
from .device import DeviceInfo, current_device
from .harness import Harness, call as _call, describe, failure_stage, reference_invoker_for
from .problem import ProblemDescription
from .registry import get_solver, solvers as all_solvers
from .solver import ConvSolution, Solver

FIND_MODES = ("normal", "fast", "hybrid", "dynamic_hybrid", "benchmark")
SORT_KEYS = ("time", "workspace")
# Timing budget per find candidate (harness.Harness.measure): one that fits keeps 3 warm-ups and 10
# timed runs; a kernel slower than about 19 ms per run gets one warm-up and fewer timed runs (at
# least 3); one whose verification run alone exceeds the budget is recorded from that run.
FIND_TIME_BUDGET_MS = 250.0


@dataclass
class Solution:
    """One verified, timed way to solve a problem (from a find, or from the FindDB)."""

    solver_id: str
    algorithm: str
    time_ms: float
    workspace_bytes: int
    config: dict | None
    verified: bool
    problem: ProblemDescription
    source: str = "find"               # "find" (benchmarked now), "db" or "predicted" (immediate mode)
    max_error: float | None = None     # relative L2 error against the float64 reference
    time_q20_ms: float | None = None
    time_q80_ms: float | None = None

    @property
    def solver(self) -> Solver:
        return get_solver(self.solver_id)


@dataclass
class Failure:
    solver_id: str
    stage: str            # "solution", "compile", "launch", "verify", "workspace"
    reason: str


class FindResult(list):
    """A list of Solutions (sorted) with what was skipped or failed, and how long the find took.

    ``source`` is "find" (benchmarked now), "db" (``db_layer`` says "user" or "system") or
    "predicted" (no measurement: ``basis`` says how the times were predicted)."""

    def __init__(self, items=(), *, problem=None, source="find", failures=(), elapsed_ms=0.0, stored=False,
                 db_layer=None, basis=None, mode=None):
        super().__init__(items)
        self.problem = problem
        self.source = source
        self.failures: list[Failure] = list(failures)
        self.elapsed_ms = elapsed_ms
        self.stored = stored
        self.db_layer = db_layer
        self.basis = basis
        self.mode = mode

    @property
    def predicted(self) -> bool:
        return self.source == "predicted"


# -- hashes that decide whether a stored record is still trusted -----------------------------

@functools.lru_cache(maxsize=None)
def kernel_hash(solver: Solver) -> str:
    """Hash of the solver's kernel sources and of its Python module (macros, launch geometry)."""
    import hashlib
    import inspect
    import sys

    h = hashlib.sha256()
    files = getattr(solver, "kernel_files", ())
    if files:
        h.update(source_hash(*files).encode())
    h.update(solver.hash_extra().encode())
    for cls in type(solver).__mro__:
        mod = sys.modules.get(cls.__module__)
        if mod is not None and cls.__module__.startswith("miofind.solvers"):
            try:
                h.update(inspect.getsource(mod).encode())
            except OSError:
                pass
    return h.hexdigest()[:16]


def warm_up() -> None:
    """Import every solver module, probe optional libraries (cuDNN frontend, cuFFT) and hash the
    kernel sources once: start-up work that a long-running process pays once, kept out of the
    first find's lookup time. The CLI calls it before its first find."""
    for s in all_solvers():
        kernel_hash(s)


# -- invoker cache keyed by (network_config, solver_id, config) --------------------------------

_invokers: dict[tuple, object] = {}
_invokers_lock = threading.Lock()


def _config_key(config) -> str:
    return json.dumps(config, sort_keys=True) if config else ""


def build_invoker(problem: ProblemDescription, solution: ConvSolution):
    kernels = [compile_kernel(k) for k in solution.kernels]
    return solution.invoker_factory(kernels)


def get_invoker(problem: ProblemDescription, solver_id: str, config=None):
    key = (problem.network_config(), solver_id, _config_key(config))
    inv = _invokers.get(key)
    if inv is None:
        solver = get_solver(solver_id)
        sol = solver.get_solution(problem, config)
        inv = (build_invoker(problem, sol), sol.workspace_bytes)
        with _invokers_lock:
            _invokers[key] = inv
    return inv


# -- find --------------------------------------------------------------------------------------

def _resolve_problem(problem_or_arrays, conv_kwargs) -> ProblemDescription:
    if isinstance(problem_or_arrays, ProblemDescription):
        if conv_kwargs:
            raise ValueError(f"convolution keywords {sorted(conv_kwargs)} are only for arrays, not a ProblemDescription")
        return problem_or_arrays
    if isinstance(problem_or_arrays, str):
        return ProblemDescription.from_key(problem_or_arrays)
    if isinstance(problem_or_arrays, (tuple, list)) and len(problem_or_arrays) == 2:
        x, w = problem_or_arrays
        return ProblemDescription.from_arrays(x, w, **conv_kwargs)
    raise ValueError(f"problem_or_arrays: expected a ProblemDescription, a key string or (x, w) arrays, "
                     f"got {type(problem_or_arrays).__name__}")


def _candidates(problem: ProblemDescription, solver_ids) -> tuple[list[Solver], list[Failure]]:
    pool = all_solvers() if solver_ids is None else [get_solver(s) for s in solver_ids]
    cands, skipped = [], []
    for s in pool:
        try:
            a = s.applicability(problem)
        except Exception as e:
            a = None
            skipped.append(Failure(s.id, "applicability", f"{e.__class__.__name__}: {e}"))
            continue
        if a:
            cands.append(s)
        elif solver_ids is not None:
            skipped.append(Failure(s.id, "applicability", a.reason))
    return cands, skipped


def _trusted_solutions(records, dev, problem, cands, verify, workspace_limit):
    """Solutions from one DB layer's records for the candidates whose record is trusted, and whether
    every candidate had one."""
    recs = {r.solver_id: r for r in records}
    out, complete = [], True
    for s in cands:
        r = recs.get(s.id)
        if r is None:
            complete = False
            continue
        ok, _ = is_trusted(r, package_version=__version__, kernel_hash=kernel_hash(s), cuda_version=dev.cuda_version)
        if not ok or (verify and not r.verified) or (r.config is not None and not s.is_valid_config(problem.as_conv(), r.config)):
            complete = False
            continue
        if workspace_limit is not None and r.workspace_bytes > workspace_limit:
            continue
        out.append(Solution(s.id, s.algorithm, r.time_ms, r.workspace_bytes, r.config, r.verified, problem,
                            source="db", max_error=r.max_error, time_q20_ms=r.time_q20_ms, time_q80_ms=r.time_q80_ms))
    return out, complete


def _from_db(dbs: Overlay, dev, problem, cands, verify, workspace_limit):
    """(solutions, complete, layer): the first layer (user, then system) whose trusted records cover
    every candidate; else the first layer with any trusted record, complete=False; else ([], False, None)."""
    partial = None
    for layer, records in dbs.lookup(dev.db_name, problem.key()):
        sols, complete = _trusted_solutions(records, dev, problem, cands, verify, workspace_limit)
        if complete and sols:
            return sols, True, layer
        if sols and partial is None:
            partial = (sols, False, layer)
    return partial or ([], False, None)


_user_dbs: dict[str, FindDB] = {}
_user_dbs_lock = threading.Lock()


def open_db(db=None) -> FindDB:
    """The user FindDB: a FindDB, or a URL/path (default $MIOFIND_DB or the per-user file), opened
    once per process and URL."""
    if isinstance(db, FindDB):
        return db
    if isinstance(db, Overlay):
        return db.user
    if db is not None and not isinstance(db, str):
        raise ValueError(f"db={db!r}: expected a FindDB, a SQLAlchemy URL or a file path")
    from .db.findb import _normalize_url, default_db_url

    url = _normalize_url(db) if db else default_db_url()
    with _user_dbs_lock:
        h = _user_dbs.get(url)
        if h is None or h._closed:
            h = _user_dbs[url] = FindDB(url)
    return h


def open_dbs(db=None, dev: DeviceInfo | None = None) -> Overlay:
    """The user FindDB over the system FindDB shipped for this GPU (if any)."""
    if isinstance(db, Overlay):
        return db
    dev = dev or current_device()
    return Overlay(open_db(db), open_system_db(dev.arch, dev.sm_count))


def first_trusted_perf(records, dev, problem: ProblemDescription, solver: Solver, *, where: str | None,
                       consequence: str):
    """The first PerfDB entry of ``records`` that is trusted (version, kernel hash, CUDA major) and
    whose config still validates, or None. Each entry passed over is reported with a FindDBWarning
    naming ``where`` it came from and the ``consequence``; with ``where=None``, silently (a query
    whose caller does not act on the entry)."""
    for r in records:
        ok, why = is_trusted(r, package_version=__version__, kernel_hash=kernel_hash(solver),
                             cuda_version=dev.cuda_version)
        if ok and not solver.is_valid_config(problem.as_conv(), r.config):
            ok, why = False, "the config no longer validates"
        if ok:
            return r
        if where is not None:
            warnings.warn(f"{where}: tuned config {r.config} of {solver.id} for {problem.key()} is not trusted "
                          f"({why}); {consequence}", FindDBWarning, stacklevel=3)
    return None


def tuned_config(dbs: Overlay, dev, problem: ProblemDescription, solver: Solver, *, report: bool = True):
    """The trusted, valid PerfDB config of a tunable solver for this problem, or None. A stored
    config that fails validity or comes from other kernel sources is ignored, with a warning unless
    ``report`` is False."""
    if not solver.tunable:
        return None
    for layer, recs in dbs.lookup_perf(dev.db_name, problem.key(), solver.id):
        r = first_trusted_perf(recs, dev, problem, solver, where=f"{layer} PerfDB" if report else None,
                               consequence="using the default config until it is re-tuned")
        if r is not None:
            return r.config
    return None


def _needs_no_compilation(problem, solver, config) -> bool:
    try:
        sol = solver.get_solution(problem, config)
        return all(is_compiled(k) for k in sol.kernels)
    except Exception:
        return False


def find_solutions(problem_or_arrays, *, mode: str | None = None, sort_by: str = "time",
                   workspace_limit: int | None = None, solvers=None, verify: bool = True, db=None,
                   store: bool = True, warmup: int = 3, iters: int = 10, seed: int | None = None,
                   time_budget_ms: float | None = FIND_TIME_BUDGET_MS, **conv_kwargs) -> FindResult:
    """Find, verify and time every applicable solver for a problem, fastest first.

    ``problem_or_arrays`` is a ProblemDescription, a FindDB key, or ``(x, w)`` arrays with
    convolution keywords (stride, padding, dilation, groups, direction, layout, math, ...).
    ``mode`` is one of FIND_MODES (module docstring; default $MIOFIND_FIND_MODE, else normal).
    ``db`` is the user FindDB (a FindDB, URL or path; default $MIOFIND_DB or the per-user file);
    the system FindDB shipped for this GPU is read beneath it. ``workspace_limit`` skips solvers
    needing more workspace bytes (results are then not stored, as they may be sub-optimal).
    ``solvers`` restricts the candidates to these ids. Each candidate is timed over ``warmup`` +
    ``iters`` runs, fewer for one too slow to fit ``time_budget_ms`` (``Harness.measure``; None
    always takes the full counts). Raises NoGPUError without a GPU and
    ValueError for bad arguments.
    """
    t0 = time.perf_counter()
    problem = _resolve_problem(problem_or_arrays, conv_kwargs)
    mode = _check_mode(mode)
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by={sort_by!r}: expected 'time' or 'workspace'")
    _check_workspace_limit(workspace_limit)
    dev = current_device()
    cands, failures = _candidates(problem, solvers)
    dbs = open_dbs(db, dev)
    done = functools.partial(_result, problem=problem, t0=t0, sort_by=sort_by, mode=mode)

    if mode != "benchmark" and cands:
        sols, complete, layer = _from_db(dbs, dev, problem, cands, verify, workspace_limit)
        if sols and (complete or mode != "normal"):
            return done(sols, source="db", failures=failures, db_layer=layer)
        if mode == "fast":
            return _predicted(problem, dbs, dev, cands, workspace_limit, failures, done)
        if mode == "dynamic_hybrid":
            ready = [s for s in cands if _needs_no_compilation(problem, s, tuned_config(dbs, dev, problem, s))]
            failures += [Failure(s.id, "dynamic_hybrid", "needs a new compilation") for s in cands if s not in ready]
            if not ready:
                return _predicted(problem, dbs, dev, cands, workspace_limit, failures, done)
            cands = ready

    sols, bench_failures, ws_skipped = _benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed,
                                                  configs=lambda s: _find_configs(dbs, dev, problem, s),
                                                  budget_ms=time_budget_ms)
    failures += bench_failures
    stored = False
    if store and not ws_skipped and sols:
        _store(dbs.user, dev, problem, sols)
        stored = True
    return done(sols, source="find", failures=failures, stored=stored)


def _find_configs(dbs, dev, problem, solver):
    cfg = tuned_config(dbs, dev, problem, solver)
    return [cfg] if cfg is not None else list(solver.find_configs(problem))


def _check_mode(mode):
    mode = mode or os.environ.get("MIOFIND_FIND_MODE", "").strip().lower() or "normal"
    if mode not in FIND_MODES:
        raise ValueError(f"mode={mode!r}: expected one of {', '.join(FIND_MODES)}")
    return mode


def _check_workspace_limit(workspace_limit):
    if workspace_limit is not None and (isinstance(workspace_limit, bool) or not isinstance(workspace_limit, int)
                                        or workspace_limit < 0):
        raise ValueError(f"workspace_limit={workspace_limit!r}: expected a non-negative integer of bytes")


def _result(sols, *, problem, t0, sort_by, mode, **kw):
    sols.sort(key=_sort_key(sort_by))
    return FindResult(sols, problem=problem, elapsed_ms=(time.perf_counter() - t0) * 1e3, mode=mode, **kw)


def _predicted(problem, dbs, dev, cands, workspace_limit, failures, done):
    from .predict import nearest_problem, predict

    best = None  # the nearest known problem over both layers, with its trusted-or-not records
    key = problem.key()
    for layer, db in dbs.layers:
        device = dev.db_name if layer == "user" else None
        near = nearest_problem(problem, db.problem_keys(device, suffix=key[key.rfind("-"):]))
        if near is not None and (best is None or near[1] < best[0][1]):
            best = (near, db.lookup(device, near[0]))
    near, recs = best if best else (None, [])
    pred = predict(problem, cands, near, recs, dev.sm_count)
    sols = []
    for s in cands:
        cfg = tuned_config(dbs, dev, problem, s) if s.tunable else None
        try:
            ws = s.workspace_bytes(problem, cfg)
        except Exception as e:
            failures.append(Failure(s.id, "workspace", f"{e.__class__.__name__}: {e}"))
            continue
        if workspace_limit is not None and ws > workspace_limit:
            continue
        sols.append(Solution(s.id, s.algorithm, pred[s.id].time_ms, ws, cfg, False, problem, source="predicted"))
    basis = "per-solver cost model"
    if near is not None:
        basis = f"nearest known problem {near[0]} (log2 distance {near[1]:.2f}), FLOP-scaled"
    return done(sols, source="predicted", failures=failures, basis=basis)


def get_solutions(problem_or_arrays, *, db=None, workspace_limit: int | None = None, solvers=None,
                  device: DeviceInfo | None = None, **conv_kwargs) -> FindResult:
    """Immediate mode: the solutions of a problem without any benchmarking or compilation.

    From the FindDBs (user over system) when they hold trusted records (``source == "db"``);
    otherwise a prediction (``source == "predicted"``, ``result.predicted`` is True): times scaled
    from the nearest known problem of the same kind, else a per-solver cost model (``basis`` says
    which). Predicted solutions run with ``run_solution`` like any other (compiling on first use).
    ``device`` defaults to the current GPU.
    """
    t0 = time.perf_counter()
    problem = _resolve_problem(problem_or_arrays, conv_kwargs)
    _check_workspace_limit(workspace_limit)
    dev = device or current_device()
    cands, failures = _candidates(problem, solvers)
    dbs = open_dbs(db, dev)
    done = functools.partial(_result, problem=problem, t0=t0, sort_by="time", mode="immediate")
    sols, _, layer = _from_db(dbs, dev, problem, cands, False, workspace_limit)
    if sols:
        return done(sols, source="db", failures=failures, db_layer=layer)
    return _predicted(problem, dbs, dev, cands, workspace_limit, failures, done)


def _sort_key(sort_by):
    if sort_by == "workspace":
        return lambda s: (s.workspace_bytes, s.time_ms)
    return lambda s: (s.time_ms, s.workspace_bytes)


def _store(db, dev, problem, sols):
    now = time.time()
    recs = [Record(device=dev.db_name, device_name=dev.name, problem_key=problem.key(), solver_id=s.solver_id,
                   algorithm=s.algorithm, time_ms=s.time_ms, workspace_bytes=s.workspace_bytes, config=s.config,
                   verified=s.verified, max_error=s.max_error if s.max_error is not None and math.isfinite(s.max_error) else None,
                   package_version=__version__, kernel_hash=kernel_hash(get_solver(s.solver_id)),
                   driver_version=dev.driver_version, cuda_version=dev.cuda_version, cupy_version=dev.cupy_version,
                   created_at=now, time_q20_ms=s.time_q20_ms, time_q80_ms=s.time_q80_ms)
            for s in sols]
    db.store(recs)


def _prepare(problem, solver, config=None):
    """Solution + compiled invoker, or a Failure. Runs in a worker thread."""
    stage = "solution"
    try:
        sol = solver.get_solution(problem, config)
        stage = "compile"
        return sol, build_invoker(problem, sol)
    except Exception as e:
        return Failure(solver.id, stage, describe(e)), None


def prepare_all(problem, todo, *, verify=True, threads=8):
    """Compile every (solver, config) of ``todo`` in parallel threads, and the reference when
    verifying; returns ([(ConvSolution, invoker) or (Failure, None)], reference invoker)."""
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(todo) + 1))) as ex:
        ref_future = ex.submit(reference_invoker_for, problem) if verify else None
        prepared = list(ex.map(lambda sc: _prepare(problem, *sc), todo))
        return prepared, (ref_future.result() if ref_future else None)


def _benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed, configs=None, budget_ms=None):
    failures: list[Failure] = []
    ws_skipped = False
    todo = []
    for s in cands:
        ws = s.workspace_bytes(problem)
        if workspace_limit is not None and ws > workspace_limit:
            failures.append(Failure(s.id, "workspace", f"needs {ws} bytes of workspace, limit {workspace_limit}"))
            ws_skipped = True
            continue
        try:
            cfgs = configs(s) if configs is not None else list(s.find_configs(problem))
        except Exception as e:
            failures.append(Failure(s.id, "solution", describe(e)))
            continue
        todo += [(s, cfg) for cfg in cfgs]

    prepared, ref_inv = prepare_all(problem, todo, verify=verify)
    h = Harness(problem, verify=verify, seed=seed, reference_invoker=ref_inv)
    sols = []
    for (s, _), (sol, inv) in zip(todo, prepared):
        if isinstance(sol, Failure):
            failures.append(sol)
            continue
        if workspace_limit is not None and sol.workspace_bytes > workspace_limit:
            failures.append(Failure(s.id, "workspace", f"config {sol.config} needs {sol.workspace_bytes} bytes of "
                                    f"workspace, limit {workspace_limit}"))
            ws_skipped = True
            continue
        try:
            m = h.measure(inv, h.workspace(sol.workspace_bytes), s.family, warmup, iters, budget_ms)
        except Exception as e:
            failures.append(Failure(s.id, *failure_stage(e)))
            continue
        sols.append(Solution(s.id, s.algorithm, m.time_ms, sol.workspace_bytes, sol.config, verify, problem,
                             max_error=m.max_error, time_q20_ms=m.q20_ms, time_q80_ms=m.q80_ms))
    # a solver that offered several configs (e.g. one per cuDNN plan) keeps its fastest, as MIOpen
    # keeps the best per solver
    best: dict[str, Solution] = {}
    for sol in sols:
        if sol.solver_id not in best or sol.time_ms < best[sol.solver_id].time_ms:
            best[sol.solver_id] = sol
    return list(best.values()), failures, ws_skipped


# -- run ---------------------------------------------------------------------------------------

_ROLE_NAMES = {"F": ("x", "w", "y"), "B": ("x (dy)", "w", "y (dx)"), "W": ("x (dy)", "w (x)", "y (dw)")}


def run_solution(solution: Solution, x, w, y=None, *, workspace=None, stream=None):
    """Run one solution on the caller's arrays and return the output.

    The positional arrays follow the solution's direction: F computes y from (x, w); B computes dx
    into ``y`` from (dy, w) passed as (x, w); W computes dw into ``y`` from (dy, x) passed as
    (x, w). ``y`` is allocated when None, otherwise written in place. Arrays may be CuPy, PyTorch
    or anything with __cuda_array_interface__ or DLPack, on the current device, C-contiguous in
    the problem's layout. ``stream`` is a CuPy stream, a torch.cuda.Stream or a raw handle.
    Raises ValueError for wrong shapes, types or devices.
    """
    import cupy

    from .tensors import as_cupy, check_array, numpy_dtype

    if not isinstance(solution, Solution):
        raise ValueError(f"solution: expected a miofind Solution, got {type(solution).__name__}")
    current_device()
    p = solution.problem
    (sa, sb, so), dt = p.io_shapes(), p.dtype
    names = _ROLE_NAMES[p.direction]
    dev_id = cupy.cuda.Device().id
    a, b = as_cupy(x, names[0]), as_cupy(w, names[1])
    check_array(a, names[0], sa, dt, dev_id)
    check_array(b, names[1], sb, dt, dev_id)
    if y is None:
        out = cupy.empty(so, dtype=numpy_dtype(dt))
    else:
        out = as_cupy(y, names[2])
        check_array(out, names[2], so, dt, dev_id)
    invoker, ws_bytes = get_invoker(p, solution.solver_id, solution.config)
    wsbuf = None
    if ws_bytes:
        if workspace is None:
            wsbuf = cupy.empty(ws_bytes, dtype=cupy.uint8)
        else:
            wsbuf = as_cupy(workspace, "workspace")
            if wsbuf.nbytes < ws_bytes:
                raise ValueError(f"workspace: {wsbuf.nbytes} bytes given, {solution.solver_id} needs {ws_bytes}")
    with _as_stream(stream):
        _call(invoker, p, a, b, out, wsbuf)
    if y is not None:
        return y
    return _like_input(out, x, dt)


def _as_stream(stream):
    import contextlib

    import cupy

    if stream is None:
        return contextlib.nullcontext()
    if isinstance(stream, (cupy.cuda.Stream, cupy.cuda.ExternalStream)):
        return stream
    ptr = getattr(stream, "cuda_stream", stream)   # torch.cuda.Stream or a raw handle
    if not isinstance(ptr, int):
        raise ValueError(f"stream: expected a CuPy stream, a torch.cuda.Stream or an int handle, got {type(stream).__name__}")
    return cupy.cuda.ExternalStream(ptr)


def _like_input(out, x, dt):
    """Return a torch tensor when the caller passed torch tensors, else the CuPy array."""
    if type(x).__module__.startswith("torch"):
        import torch

        t = torch.from_dlpack(out)
        return t.view(torch.bfloat16) if dt == "BF16" else t
    return out
