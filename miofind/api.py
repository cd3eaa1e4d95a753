"""The public API: find_solutions, get_solutions, run_solution.

Thin fronts over the find procedure (``miofind.find``), the invoker cache (``miofind.invokers``)
and trust (``miofind.trust``).
"""

from __future__ import annotations

import os
import time

from .device import DeviceInfo, current_device
from .find import FIND_TIME_BUDGET_MS, check_cut_factor, check_mode, check_with_naive, find, immediate, resolve_problem
from .invokers import current_stream, stream_handle
from .registry import solvers as all_solvers
from .results import Failure, FindResult, Solution
from .trust import trust_key

__all__ = ["find_solutions", "get_solutions", "run_solution", "warm_up", "clear_caches", "Solution", "Failure",
           "FindResult"]

# In-process memo of find/get answers: (what, problem, mode, options, device) -> (write generation,
# FindResult). Like PyTorch's benchmark cache, but only until this process writes to a FindDB.
_memo: dict[tuple, tuple[int, FindResult]] = {}
_MEMO_MAX = 65536


def clear_caches() -> None:
    """Empty the in-process caches: answers of find_solutions/get_solutions, invokers and prepared
    solutions (compiled kernels stay loaded and in the binary cache)."""
    from .invokers import clear

    _memo.clear()
    clear()


def _memo_get(key):
    from .db.base import write_generation

    hit = _memo.get(key)
    if hit is not None and hit[0] == write_generation():
        r = hit[1]
        return FindResult(r, problem=r.problem, source=r.source, failures=r.failures, elapsed_ms=0.0,
                          stored=False, db_layer=r.db_layer, basis=r.basis, mode=r.mode,
                          model_version=r.model_version)
    return None


def _memo_put(key, gen: int, res: FindResult) -> None:
    if len(_memo) >= _MEMO_MAX:
        _memo.clear()
    _memo[key] = (gen, res)


def _memo_key(what, problem, db, solvers, *options):
    if db is None:      # the DBs the environment names
        env = os.environ
        db = (env.get("MIOFIND_DB"), env.get("MIOPEN_USER_DB_PATH"), env.get("MIOFIND_SYSTEM_DB"))
    elif not isinstance(db, str):
        db = id(db)
    return (what, problem, db, tuple(solvers) if solvers is not None else None, *options)


def warm_up() -> None:
    """Import every solver module and compute every trust key once: start-up work that a
    long-running process pays once, kept out of the first find's lookup time. ``miofind tune`` calls it
    before its first find (a one-problem ``miofind find`` does not: it needs only its direction's solvers)."""
    for s in all_solvers():
        trust_key(s)


def find_solutions(problem_or_arrays, *, mode: str | None = None, sort_by: str = "time",
                   workspace_limit: int | None = None, solvers=None, verify: bool = True, db=None,
                   store: bool = True, warmup: int = 3, iters: int = 10, seed: int | None = None,
                   time_budget_ms: float | None = FIND_TIME_BUDGET_MS, with_naive: bool | None = None,
                   cut_factor: float | None = None, defer: bool | None = None, **conv_kwargs) -> FindResult:
    """Find, verify and time every applicable solver for a problem, fastest first.

    ``problem_or_arrays`` is a ProblemDescription, a FindDB key, or ``(x, w)`` arrays with
    convolution keywords (stride, padding, dilation, groups, direction, layout, math, ...).
    ``mode`` is one of ``miofind.find.FIND_MODES`` (default $MIOFIND_FIND_MODE, else normal).
    ``db`` is the user FindDB (a FindDB, URL or path; default $MIOFIND_DB or the per-user file);
    the system FindDB shipped for this GPU is read beneath it. ``workspace_limit`` skips solvers
    needing more workspace bytes (results are then not stored, as they may be sub-optimal).
    ``solvers`` restricts the candidates to these ids. Each candidate is timed over ``warmup`` +
    ``iters`` runs, fewer for one too slow to fit ``time_budget_ms`` (``Harness.measure``; None
    always takes the full counts). Without ``solvers``, the naive reference solvers are not timed
    unless ``with_naive`` (default $MIOFIND_WITH_NAIVE, else False) or nothing else applies; a
    ``solvers`` list runs what it names. ``cut_factor`` (default $MIOFIND_CUT_FACTOR, else
    ``miofind.find.FIND_CUT_FACTOR``; 0: off) stops timing a candidate clearly slower than that
    factor times the best so far (``Solution.cut``; see ``miofind.find``). ``defer`` (default: True
    when no ``solvers`` are named) lets a benchmark leave a solver whose kernels are not compiled and
    that has no generic build to the background in MIOFIND_SPECIALIZE=background mode (a failure of
    stage ``deferred``; it is measured and stored when compiled: ``miofind.tiered``), as long as
    another solver is measured at once. A benchmarked result's
    ``timing`` says where the time went. Raises NoGPUError without a GPU and ValueError for bad
    arguments.
    """
    t0 = time.perf_counter()
    problem = resolve_problem(problem_or_arrays, conv_kwargs)
    mode = check_mode(mode)
    with_naive = check_with_naive(with_naive)
    cut_factor = check_cut_factor(cut_factor)
    key = None
    if mode != "benchmark":
        key = _memo_key("find", problem, db, solvers, mode, sort_by, workspace_limit, verify, with_naive, store, defer,
                        current_device())
        hit = _memo_get(key)
        if hit is not None:
            hit.elapsed_ms = (time.perf_counter() - t0) * 1e3
            return hit
    from .db.base import write_generation

    gen = write_generation()
    res = find(problem, mode=mode, sort_by=sort_by, workspace_limit=workspace_limit, solvers=solvers,
               verify=verify, db=db, store=store, warmup=warmup, iters=iters, seed=seed,
               time_budget_ms=time_budget_ms, with_naive=with_naive, cut_factor=cut_factor, t0=t0, defer=defer)
    if key is not None and res.source in ("db", "predicted"):   # a measured answer is memoised once read back
        _memo_put(key, gen, res)
    return res


def get_solutions(problem_or_arrays, *, db=None, workspace_limit: int | None = None, solvers=None,
                  device: DeviceInfo | str | None = None, with_naive: bool | None = None,
                  **conv_kwargs) -> FindResult:
    """Immediate mode: the solutions of a problem without any benchmarking or compilation.

    From the FindDBs (user over system) when they hold trusted records (``source == "db"``);
    otherwise a prediction (``source == "predicted"``, ``result.predicted`` is True): times scaled
    from the nearest known problem of the same kind, else a per-solver cost model (``basis`` says
    which). Predicted solutions run with ``run_solution`` like any other (compiling on first use).
    ``device`` defaults to the current GPU; a DeviceInfo or a device string such as
    ``"sm_90-132"`` answers without a GPU from the system DB shipped for it. The candidates are
    those of ``find_solutions`` (the naive solvers only with ``with_naive`` or $MIOFIND_WITH_NAIVE).
    """
    t0 = time.perf_counter()
    problem = resolve_problem(problem_or_arrays, conv_kwargs)
    if isinstance(device, str):
        from .device import device_from_string
        device = device_from_string(device)
    elif device is not None and not isinstance(device, DeviceInfo):
        raise ValueError(f"device={device!r}: expected a DeviceInfo or a device string such as 'sm_90-132'")
    dev = device or current_device()
    with_naive = check_with_naive(with_naive)
    key = _memo_key("get", problem, db, solvers, workspace_limit, with_naive, dev)
    hit = _memo_get(key)
    if hit is not None:
        hit.elapsed_ms = (time.perf_counter() - t0) * 1e3
        return hit
    from .db.base import write_generation

    gen = write_generation()
    res = immediate(problem, dev=dev, db=db, workspace_limit=workspace_limit, solvers=solvers, with_naive=with_naive,
                    t0=t0)
    _memo_put(key, gen, res)
    return res


def run_solution(solution: Solution, x, w, y=None, *, workspace=None, stream=None, bias=None):
    """Run one solution on the caller's arrays and return the output.

    The positional arrays follow the solution's direction: F computes y from (x, w); B computes dx
    into ``y`` from (dy, w) passed as (x, w); W computes dw into ``y`` from (dy, x) passed as
    (x, w). Arrays may be CuPy or PyTorch (a channels-last problem also takes torch tensors in
    ``channels_last`` memory format) or anything with ``__cuda_array_interface__``, on the current
    device, dense in the problem's layout. ``y`` is allocated when None (a torch tensor for torch
    inputs, in their memory format), otherwise written in place. ``stream`` is a CuPy stream, a
    torch.cuda.Stream or a raw handle; default the current stream (torch's for torch inputs).
    ``bias``: the bias (k elements) of a fused forward problem with ``bias=1``.

    Streams, as in CUDA: the caller orders inputs (and a ``y`` or ``workspace`` it passes) written
    on another stream with an event, and reads the output on the launch stream (or after an event);
    a ``workspace`` it passes must not be in use on another stream at the same time. miofind runs
    every launch of the solution on that stream and allocates the output and its own workspace on
    it, so the memory pools never hand them to other work before the launches are done; calls from
    several threads, on one stream or many, are safe. The call returns once the launches are
    queued. For repeated calls, ``solution.prepare()`` skips this function's checks and allocation.
    Raises ValueError for wrong shapes, types or devices.
    """
    pr = getattr(solution, "_prepared", None)
    if pr is None:
        if not isinstance(solution, Solution):
            raise ValueError(f"solution: expected a miofind Solution, got {type(solution).__name__}")
        current_device()
        pr = solution._prepared = solution.prepare()
    if stream is None:
        s, own = current_stream(x), True
    else:
        s, own = stream_handle(stream), False
    if y is None:
        y = _allocate_output(pr, x, s, own)
    return pr(x, w, y, workspace=workspace, stream=s, bias=bias)


def _allocate_output(pr, x, stream: int, current: bool):
    """The output of a prepared solution, made on ``stream`` (``current``: it is the current one): a
    torch tensor for torch inputs (in channels_last format when the input is), else a CuPy array."""
    if type(x) is pr._ttype or type(x).__module__.startswith("torch"):
        import torch

        dt = (pr._torch or pr._torch_info())[0]
        dev = x.get_device()
        # (shape, strides) of the output, dense: torch's channels_last view where the input is one
        # (torch.empty_strided costs less host time than torch.empty with a memory format)
        shape, strides = pr.torch_output(pr._cl[2] and x.shape == pr._logical[0]
                                         and not (x.shape == pr._shapes[0] and x.is_contiguous()))
        if current:
            return torch.empty_strided(shape, strides, dtype=dt, device=dev)
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=dev)):
            return torch.empty_strided(shape, strides, dtype=dt, device=dev)
    import cupy

    from .launch import cupy_stream

    with cupy_stream(stream):
        return cupy.empty(pr._shapes[2], dtype=pr._np)
