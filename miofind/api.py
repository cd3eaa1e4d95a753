"""The public API: find_solutions, get_solutions, run_solution.

Thin fronts over the find procedure (``miofind.find``), the invoker cache (``miofind.invokers``)
and trust (``miofind.trust``).
"""

from __future__ import annotations

import time

from .device import DeviceInfo, current_device
from .find import FIND_TIME_BUDGET_MS, check_mode, find, immediate, resolve_problem
from .invokers import as_stream, call, get_invoker, like_input
from .registry import solvers as all_solvers
from .results import Failure, FindResult, Solution
from .trust import trust_key

__all__ = ["find_solutions", "get_solutions", "run_solution", "warm_up", "Solution", "Failure", "FindResult"]


def warm_up() -> None:
    """Import every solver module and compute every trust key once: start-up work that a
    long-running process pays once, kept out of the first find's lookup time. The CLI calls it
    before its first find."""
    for s in all_solvers():
        trust_key(s)


def find_solutions(problem_or_arrays, *, mode: str | None = None, sort_by: str = "time",
                   workspace_limit: int | None = None, solvers=None, verify: bool = True, db=None,
                   store: bool = True, warmup: int = 3, iters: int = 10, seed: int | None = None,
                   time_budget_ms: float | None = FIND_TIME_BUDGET_MS, **conv_kwargs) -> FindResult:
    """Find, verify and time every applicable solver for a problem, fastest first.

    ``problem_or_arrays`` is a ProblemDescription, a FindDB key, or ``(x, w)`` arrays with
    convolution keywords (stride, padding, dilation, groups, direction, layout, math, ...).
    ``mode`` is one of ``miofind.find.FIND_MODES`` (default $MIOFIND_FIND_MODE, else normal).
    ``db`` is the user FindDB (a FindDB, URL or path; default $MIOFIND_DB or the per-user file);
    the system FindDB shipped for this GPU is read beneath it. ``workspace_limit`` skips solvers
    needing more workspace bytes (results are then not stored, as they may be sub-optimal).
    ``solvers`` restricts the candidates to these ids. Each candidate is timed over ``warmup`` +
    ``iters`` runs, fewer for one too slow to fit ``time_budget_ms`` (``Harness.measure``; None
    always takes the full counts). Raises NoGPUError without a GPU and ValueError for bad
    arguments.
    """
    t0 = time.perf_counter()
    problem = resolve_problem(problem_or_arrays, conv_kwargs)
    return find(problem, mode=check_mode(mode), sort_by=sort_by, workspace_limit=workspace_limit, solvers=solvers,
                verify=verify, db=db, store=store, warmup=warmup, iters=iters, seed=seed,
                time_budget_ms=time_budget_ms, t0=t0)


def get_solutions(problem_or_arrays, *, db=None, workspace_limit: int | None = None, solvers=None,
                  device: DeviceInfo | str | None = None, **conv_kwargs) -> FindResult:
    """Immediate mode: the solutions of a problem without any benchmarking or compilation.

    From the FindDBs (user over system) when they hold trusted records (``source == "db"``);
    otherwise a prediction (``source == "predicted"``, ``result.predicted`` is True): times scaled
    from the nearest known problem of the same kind, else a per-solver cost model (``basis`` says
    which). Predicted solutions run with ``run_solution`` like any other (compiling on first use).
    ``device`` defaults to the current GPU; a DeviceInfo or a device string such as
    ``"sm_90-132"`` answers without a GPU from the system DB shipped for it.
    """
    t0 = time.perf_counter()
    problem = resolve_problem(problem_or_arrays, conv_kwargs)
    if isinstance(device, str):
        from .device import device_from_string
        device = device_from_string(device)
    elif device is not None and not isinstance(device, DeviceInfo):
        raise ValueError(f"device={device!r}: expected a DeviceInfo or a device string such as 'sm_90-132'")
    return immediate(problem, dev=device or current_device(), db=db, workspace_limit=workspace_limit,
                     solvers=solvers, t0=t0)


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
    with as_stream(stream):
        call(invoker, p, a, b, out, wsbuf)
    if y is not None:
        return y
    return like_input(out, x, dt)
