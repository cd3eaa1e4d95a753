"""CuPy allocations on the PyTorch path, served by PyTorch's caching allocator.

A prepared solution's launches allocate nothing when given a workspace, but a few solutions make
per-stream state on their first call on a stream (a cuBLAS workspace, a cuFFT work area) through
CuPy. ``torch_allocator()`` routes those through ``torch.cuda.caching_allocator_alloc`` on CuPy's
current stream, so that one memory pool serves PyTorch and miofind (also inside CUDA-graph
capture, where PyTorch's allocator serves the graph's private pool).
"""

from __future__ import annotations

import contextlib
import sys


class _TorchBlock:
    """Owns one block of PyTorch's caching allocator; frees it when CuPy drops the memory."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __del__(self) -> None:
        if self.ptr:
            try:
                import torch
            except ImportError:     # interpreter shutdown: the process's memory goes with it
                return
            torch.cuda.caching_allocator_delete(self.ptr)


def _alloc(size: int):
    import cupy
    import torch

    dev = cupy.cuda.runtime.getDevice()
    stream = cupy.cuda.get_current_stream().ptr
    p = torch.cuda.caching_allocator_alloc(size, dev, stream) if size else 0
    mem = cupy.cuda.memory.UnownedMemory(p, size, _TorchBlock(p), dev)
    return cupy.cuda.memory.MemoryPointer(mem, 0)


def torch_allocator():
    """A context (this thread only) in which CuPy allocates from PyTorch's caching allocator."""
    import cupy
    return cupy.cuda.using_allocator(_alloc)


@contextlib.contextmanager
def release_find_memory():
    """Around a find: afterwards, return what CuPy's pool cached during it (random inputs, reference
    outputs, candidate workspaces) to the driver, so that it does not compete with PyTorch's pool."""
    try:
        yield
    finally:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()


def _tree_managers() -> list:
    """The CUDA-graph tree managers of ``torch.compile`` (``mode="reduce-overhead"``) made in this process: none
    before its module is imported. Raises where another torch keeps them elsewhere."""
    mod = sys.modules.get("torch._inductor.cudagraph_trees")
    if mod is None:
        return []
    containers = mod.get_obj(mod.local, "tree_manager_containers")
    return [c.tree_manager for c in containers.values() if getattr(c, "tree_manager", None) is not None]


def graph_trees_in_use() -> bool:
    """Whether ``torch.compile``'s CUDA-graph trees (``mode="reduce-overhead"``) run in this process: their
    warm-up runs route the allocations of their stream to a graph pool, where a replacement Entry's
    workspace and per-stream state must not land (torch then refuses the pool's untracked tensor)."""
    try:
        return bool(_tree_managers())
    except Exception:       # noqa: BLE001  another torch: assume they run
        return True


def in_graph_tree_run() -> bool:
    """Whether this thread runs on the stream of one of ``torch.compile``'s CUDA-graph trees: their warm-up and
    recording runs of a compiled graph (``mode="reduce-overhead"``), whose launches are then replayed with no host
    work per call. Eager code elsewhere in the same process runs on its own streams."""
    try:
        managers = _tree_managers()
        if not managers:
            return False
        import torch
        cur = torch.cuda.current_stream()
        return any(m.stream == cur for m in managers)
    except Exception:       # noqa: BLE001  another torch: whether trees run at all (assumed, as graph_trees_in_use)
        return True


def first_call_allocator():
    """The allocator context of a solution's first call on a stream (per-stream state it makes through CuPy): PyTorch's
    (``torch_allocator``), except in a process running CUDA-graph trees (``graph_trees_in_use``), whose warm-up
    runs send this thread's allocations to a graph pool that must hold no tensor but the graph's outputs: CuPy's
    own pool keeps that state then."""
    return contextlib.nullcontext() if graph_trees_in_use() else torch_allocator()
