"""find_solutions / run_solution: the public API.

A find checks applicability, compiles every candidate in parallel threads, runs each on fresh
random inputs with a poisoned output, verifies it against the float64 naive reference, times it
with CUDA events (median after warm-ups, with 20/80% quantiles), sorts, and stores the results in
the FindDB. A second find of the same problem on the same device is answered from the FindDB
(``Solution.source == "db"``) when every candidate has a trusted record.
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import __version__
from .compile import compile_kernel, source_hash
from .db import FindDB, Record, is_trusted
from .device import current_device
from .problem import ProblemDescription
from .registry import get_solver, reference_solver, solvers as all_solvers
from .solver import ConvSolution, Solver

FIND_MODES = ("normal", "benchmark")
SORT_KEYS = ("time", "workspace")


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
    source: str = "find"               # "find" (benchmarked now) or "db"
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
    """A list of Solutions (sorted) with what was skipped or failed, and how long the find took."""

    def __init__(self, items=(), *, problem=None, source="find", failures=(), elapsed_ms=0.0, stored=False):
        super().__init__(items)
        self.problem = problem
        self.source = source
        self.failures: list[Failure] = list(failures)
        self.elapsed_ms = elapsed_ms
        self.stored = stored


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


def _call(invoker, problem: ProblemDescription, a, b, out, workspace):
    # A transposed problem's weights gradient is the ordinary one with the activations swapped.
    if problem.transposed and problem.direction == "W":
        a, b = b, a
    invoker(a, b, out, workspace)


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


def _from_db(db, dev, problem, cands, verify, workspace_limit):
    recs = {r.solver_id: r for r in db.lookup(dev.db_name, problem.key())}
    out = []
    for s in cands:
        r = recs.get(s.id)
        if r is None:
            return None
        ok, _ = is_trusted(r, package_version=__version__, kernel_hash=kernel_hash(s), cuda_version=dev.cuda_version)
        if not ok or (verify and not r.verified):
            return None
        if r.config is not None and not s.is_valid_config(problem.as_conv(), r.config):
            return None
        if workspace_limit is not None and r.workspace_bytes > workspace_limit:
            continue
        out.append(Solution(s.id, s.algorithm, r.time_ms, r.workspace_bytes, r.config, r.verified, problem,
                            source="db", max_error=r.max_error, time_q20_ms=r.time_q20_ms, time_q80_ms=r.time_q80_ms))
    return out


def open_db(db=None):
    if db is None or isinstance(db, str):
        return FindDB(db)
    return db


def find_solutions(problem_or_arrays, *, mode: str | None = None, sort_by: str = "time",
                   workspace_limit: int | None = None, solvers=None, verify: bool = True, db=None,
                   store: bool = True, warmup: int = 3, iters: int = 10, seed: int | None = None,
                   **conv_kwargs) -> FindResult:
    """Find, verify and time every applicable solver for a problem, fastest first.

    ``problem_or_arrays`` is a ProblemDescription, a FindDB key, or ``(x, w)`` arrays with
    convolution keywords (stride, padding, dilation, groups, direction, layout, math, ...).
    ``mode``: "normal" answers from the FindDB when every candidate has a trusted record and
    benchmarks otherwise; "benchmark" always benchmarks (default: $MIOFIND_FIND_MODE or normal).
    ``workspace_limit`` skips solvers needing more workspace bytes (results are then not stored,
    as they may be sub-optimal). ``solvers`` restricts the candidates to these ids.
    Raises NoGPUError without a GPU and ValueError for bad arguments.
    """
    t0 = time.perf_counter()
    problem = _resolve_problem(problem_or_arrays, conv_kwargs)
    mode = mode or os.environ.get("MIOFIND_FIND_MODE", "normal")
    if mode not in FIND_MODES:
        raise ValueError(f"mode={mode!r}: expected one of {', '.join(FIND_MODES)}")
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by={sort_by!r}: expected 'time' or 'workspace'")
    if workspace_limit is not None and (not isinstance(workspace_limit, int) or workspace_limit < 0):
        raise ValueError(f"workspace_limit={workspace_limit!r}: expected a non-negative integer of bytes")
    dev = current_device()
    cands, failures = _candidates(problem, solvers)

    dbh = open_db(db) if (store or mode == "normal") else None
    if mode == "normal" and cands and dbh is not None:
        hit = _from_db(dbh, dev, problem, cands, verify, workspace_limit)
        if hit is not None:
            hit.sort(key=_sort_key(sort_by))
            return FindResult(hit, problem=problem, source="db", failures=failures,
                              elapsed_ms=(time.perf_counter() - t0) * 1e3)

    sols, bench_failures, ws_skipped = _benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed)
    failures += bench_failures
    sols.sort(key=_sort_key(sort_by))
    stored = False
    if store and dbh is not None and not ws_skipped and sols:
        _store(dbh, dev, problem, sols)
        stored = True
    return FindResult(sols, problem=problem, source="find", failures=failures,
                      elapsed_ms=(time.perf_counter() - t0) * 1e3, stored=stored)


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
        return Failure(solver.id, stage, f"{e.__class__.__name__}: {str(e).strip()[:2000]}"), None


def _time_ms(fn, warmup: int, iters: int):
    import cupy

    for _ in range(warmup):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(iters):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(round(f * (len(times) - 1))))]  # noqa: E731
    return q(0.5), q(0.2), q(0.8)


def _benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed):
    import cupy

    from .verify import poison, random_array, rel_error, to_float64, tolerance

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
            configs = list(s.find_configs(problem))
        except Exception as e:
            failures.append(Failure(s.id, "solution", f"{e.__class__.__name__}: {str(e).strip()[:2000]}"))
            continue
        todo += [(s, cfg) for cfg in configs]

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(todo) + 1))) as ex:
        ref_future = ex.submit(_reference_invoker, problem) if verify else None
        prepared = list(ex.map(lambda sc: _prepare(problem, *sc), todo))
        ref_inv = ref_future.result() if ref_future else None

    dt = problem.dtype
    rng = cupy.random.default_rng(seed)
    a_shape, b_shape, out_shape = problem.io_shapes()
    a = random_array(a_shape, dt, rng)
    b = random_array(b_shape, dt, rng)
    out = cupy.empty(out_shape, dtype=a.dtype)
    ref = None
    if verify:
        ref = cupy.empty(out_shape, dtype=cupy.float64)
        ref.fill(cupy.nan)
        _call(ref_inv, problem, to_float64(a, dt), to_float64(b, dt), ref, None)
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
            wsbuf = cupy.empty(sol.workspace_bytes, dtype=cupy.uint8) if sol.workspace_bytes else None
            poison(out, dt)
            _call(inv, problem, a, b, out, wsbuf)
            cupy.cuda.get_current_stream().synchronize()
            err = None
            if verify:
                err = rel_error(to_float64(out, dt), ref)
                tol = tolerance(dt, s.family, problem.as_conv().direction, problem.math)
                if not err <= tol:
                    failures.append(Failure(s.id, "verify", f"relative error {err:.3g} exceeds {tol:.1g}"))
                    continue
            med, q20, q80 = _time_ms(lambda: _call(inv, problem, a, b, out, wsbuf), warmup, iters)
        except Exception as e:
            failures.append(Failure(s.id, "launch", f"{e.__class__.__name__}: {str(e).strip()[:2000]}"))
            continue
        sols.append(Solution(s.id, s.algorithm, med, sol.workspace_bytes, sol.config, verify, problem,
                             max_error=err, time_q20_ms=q20, time_q80_ms=q80))
    # a solver that offered several configs (e.g. one per cuDNN plan) keeps its fastest, as MIOpen
    # keeps the best per solver
    best: dict[str, Solution] = {}
    for sol in sols:
        if sol.solver_id not in best or sol.time_ms < best[sol.solver_id].time_ms:
            best[sol.solver_id] = sol
    return list(best.values()), failures, ws_skipped


def _reference_invoker(problem: ProblemDescription):
    conv = problem.as_conv()
    sol = reference_solver(conv.direction).get_solution(conv, None, reference=True)
    return build_invoker(conv, sol)


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
