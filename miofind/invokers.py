"""Invokers: a solution's kernels compiled and bound, cached per (network_config, solver, config).

An invoker runs one solution: ``invoker(a, b, out, workspace, stream)`` with device pointers in
the order of ``ProblemDescription.io_shapes()`` and a raw stream handle (``miofind.solver``).
``call`` runs one on arrays (CuPy, torch, ``__cuda_array_interface__``) on CuPy's current stream
and applies the one argument swap a problem needs (a transposed problem's weights gradient).
"""

from __future__ import annotations

import contextlib
import json
import threading

from .compile import compile_kernel
from .launch import ptr
from .problem import ProblemDescription
from .registry import get_solver
from .solver import ConvSolution

_invokers: dict[tuple, tuple] = {}
_lock = threading.Lock()


def config_key(config) -> str:
    return json.dumps(config, sort_keys=True) if config else ""


def build_invoker(problem: ProblemDescription, solution: ConvSolution):
    """Compile (or fetch from the binary cache) the solution's kernels and bind them."""
    kernels = [compile_kernel(k) for k in solution.kernels]
    return solution.invoker_factory(kernels)


def get_invoker(problem: ProblemDescription, solver_id: str, config=None):
    """(invoker, workspace bytes) of a solver for a problem, built once per process."""
    key = (problem.network_config(), solver_id, config_key(config))
    inv = _invokers.get(key)
    if inv is None:
        sol = get_solver(solver_id).get_solution(problem, config)
        inv = (build_invoker(problem, sol), sol.workspace_bytes)
        with _lock:
            _invokers[key] = inv
    return inv


def clear() -> None:
    """Forget every cached invoker (their kernels stay loaded in CuPy's modules)."""
    with _lock:
        _invokers.clear()


def call(invoker, problem: ProblemDescription, a, b, out, workspace, stream: int | None = None) -> None:
    """Run ``invoker`` on arrays (or pointers) on ``stream`` (default: CuPy's current stream)."""
    import cupy

    # A transposed problem's weights gradient is the ordinary one with the activations swapped.
    if problem.transposed and problem.direction == "W":
        a, b = b, a
    if stream is None:
        stream = cupy.cuda.get_current_stream().ptr
    invoker(ptr(a), ptr(b), ptr(out), ptr(workspace), stream)


def as_stream(stream):
    """A context entering ``stream``: a CuPy stream, a torch.cuda.Stream or a raw handle; None:
    the current stream."""
    import cupy

    if stream is None:
        return contextlib.nullcontext()
    if isinstance(stream, (cupy.cuda.Stream, cupy.cuda.ExternalStream)):
        return stream
    ptr = getattr(stream, "cuda_stream", stream)   # torch.cuda.Stream or a raw handle
    if isinstance(ptr, bool) or not isinstance(ptr, int):
        raise ValueError(f"stream: expected a CuPy stream, a torch.cuda.Stream or an int handle, got {type(stream).__name__}")
    return cupy.cuda.ExternalStream(ptr)


def like_input(out, x, dt: str):
    """Return a torch tensor when the caller passed torch tensors, else the CuPy array."""
    if type(x).__module__.startswith("torch"):
        import torch

        t = torch.from_dlpack(out)
        return t.view(torch.bfloat16) if dt == "BF16" else t
    return out
