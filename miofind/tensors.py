"""Tensor helpers: element strides per layout, data-type mapping, and accepting user arrays.

User arrays may be anything with ``__cuda_array_interface__`` or DLPack (CuPy, PyTorch, JAX);
they are viewed as CuPy arrays without copying.
"""

from __future__ import annotations

import math

import numpy as np

from .problem import ProblemDescription

NUMPY_DTYPES = {"FP32": np.float32, "FP16": np.float16, "FP64": np.float64}
CUDA_TYPES = {"FP32": "float", "FP16": "__half", "BF16": "__nv_bfloat16", "FP64": "double"}


def numpy_dtype(dt: str):
    """numpy storage dtype for a miofind type name (BF16 is stored as raw 16-bit words)."""
    if dt in NUMPY_DTYPES:
        return np.dtype(NUMPY_DTYPES[dt])
    if dt == "BF16":
        return np.dtype(np.uint16)
    raise ValueError(f"dtype={dt!r}: not a type miofind computes in")


def element_strides(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int, int]:
    """(n, c, d, h, w) element strides of a dense tensor of ``shape`` in ``layout``.

    For weights the roles are (k, c, z, y, x). 2D tensors get a d stride of 0 (D = 1).
    """
    nd = len(shape) - 2
    contig = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        contig[i] = contig[i + 1] * shape[i + 1]
    if layout in ("NHWC", "NDHWC"):
        sn, sc, sp = contig[0], contig[-1], contig[1:-1]
    else:
        sn, sc, sp = contig[0], contig[1], contig[2:]
    if nd == 2:
        return (sn, sc, 0, sp[0], sp[1])
    return (sn, sc, sp[0], sp[1], sp[2])


def max_linear_index(problem: ProblemDescription) -> int:
    """The element count of the problem's largest tensor, exact (Python ints: np.prod wraps at 2^63)."""
    p = problem
    return max(math.prod(p.x_shape), math.prod(p.y_shape), math.prod(p.w_shape))


def needs_int64(problem: ProblemDescription) -> bool:
    """True when some tensor has 2^31 elements or more (32-bit offsets would overflow)."""
    return max_linear_index(problem) >= 2**31 - 1


INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1


def index_bound(problem: ProblemDescription, step: int = 0) -> int:
    """The largest magnitude a direct convolution's index arithmetic reaches, exact on Python ints: the
    largest tensor's element count plus a grid-stride ``step``, and per spatial axis the input
    coordinate o*stride - pad + tap*dilation (or i + pad - tap*dilation) and its terms."""
    p = problem.as_conv()
    bound = max_linear_index(p) + step
    for i, o, f, q, s, d in zip(p.in_size, p.out_size, p.filter_size, p.pads, p.strides, p.dilations):
        bound = max(bound, (o - 1) * s + q + (f - 1) * d, i + q + (f - 1) * d, o * s, f * d)
    return bound


def wide_index(problem: ProblemDescription, step: int = 0) -> bool:
    """Whether a direct kernel needs 64-bit index arithmetic: ``index_bound`` (with the grid-stride
    ``step``) exceeds what a 32-bit signed int holds. (A tensor just under 2^31 elements with a 2^28
    grid-stride step overflows int: the choice must count the step, not only the tensor size.)"""
    return index_bound(problem, step) > INT32_MAX


def index_overflow(problem: ProblemDescription, step: int = 0) -> str | None:
    """Why even 64-bit index arithmetic cannot hold ``index_bound``, or None when it can: a guard
    clause for applicability (the kernels pick 32 or 64 bits with ``wide_index``)."""
    bound = index_bound(problem, step)
    if bound > INT64_MAX:
        return f"index arithmetic reaches {bound}, beyond 64-bit indices"
    return None


def _is_torch(a) -> bool:
    return type(a).__module__.startswith("torch")


def as_cupy(a, name: str):
    """View a CUDA array as a CuPy array without copying, or raise ValueError naming it."""
    import cupy

    if isinstance(a, cupy.ndarray):
        return a
    if _is_torch(a) and str(getattr(a, "dtype", "")) == "torch.bfloat16":
        import torch
        a = a.view(torch.int16)  # BF16 travels as raw 16-bit words
    if hasattr(a, "__cuda_array_interface__"):
        try:
            return cupy.asarray(a)
        except Exception as e:
            raise ValueError(f"{name}: cannot view as a CUDA array: {e}") from None
    if hasattr(a, "__dlpack__"):
        if _is_torch(a) and getattr(a, "is_cuda", True) is False:
            raise ValueError(f"{name}: is a CPU torch tensor; move it to the GPU (.cuda()) first")
        try:
            return cupy.from_dlpack(a)
        except Exception as e:
            raise ValueError(f"{name}: not a CUDA array ({type(a).__module__}.{type(a).__name__}): {e}") from None
    raise ValueError(f"{name}: expected a CUDA array (CuPy, PyTorch, or anything with __cuda_array_interface__ "
                     f"or DLPack), got {type(a).__module__}.{type(a).__name__}")


def check_array(arr, name: str, shape: tuple[int, ...], dtype: str, device_id: int) -> None:
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{name}.shape={tuple(arr.shape)}: expected {tuple(shape)}")
    if dtype == "BF16":
        if not (arr.dtype.itemsize == 2 and (arr.dtype.kind in "ui" or "bfloat16" in str(arr.dtype))):
            raise ValueError(f"{name}.dtype={arr.dtype}: expected bfloat16 (or its raw 16-bit words as uint16/int16)")
    else:
        want = numpy_dtype(dtype)
        if arr.dtype != want:
            raise ValueError(f"{name}.dtype={arr.dtype}: expected {want} ({dtype})")
    if arr.device.id != device_id:
        raise ValueError(f"{name} is on device {arr.device.id}: expected device {device_id}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name}: must be C-contiguous in its layout (strides {arr.strides})")
