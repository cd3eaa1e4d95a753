"""CuPy allocations on the PyTorch path, served by PyTorch's caching allocator.

A prepared solution's launches allocate nothing when given a workspace, but a few solutions make
per-stream state on their first call on a stream (a cuBLAS workspace, a cuFFT work area) through
CuPy. ``torch_allocator()`` routes those through ``torch.cuda.caching_allocator_alloc`` on CuPy's
current stream, so that one memory pool serves PyTorch and miofind (also inside CUDA-graph
capture, where PyTorch's allocator serves the graph's private pool).
"""

from __future__ import annotations

import contextlib


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
