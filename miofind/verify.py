"""Verification: inputs, poisoning, the error metrics against the float64 reference, the tolerances.

Every output element is first poisoned with NaN (an element the solver does not write stays NaN and
fails). The output is compared with a float64 reference computed on inputs already rounded to the
problem's type, so the errors measure the algorithm and the output rounding, not the input rounding.

**Metrics** (``Errors``), with e = out - ref over the n output elements:

- ``rms = sqrt(sum(e^2) / n) / max|ref|``: MIOpen's driver metric (``miopen::rms_range`` in MIOpen's
  ``test/verify.hpp``, checked by ``driver/conv_driver.hpp``), except that MIOpen divides by the larger
  of max|out| and max|ref|: dividing by max|ref| alone never gives less, and differs only for an output
  whose largest element is wrong.
- ``max_abs = max|e| / max|ref|``: the worst element. The RMS averages an isolated wrong element away
  (one element off by the output's standard deviation among 25.7M moves it by ~4e-5).
- ``rel_l2 = ||e|| / ||ref||``: what find stores as ``max_error`` (and what earlier versions checked).

**Conversion.** ``rms = rel_l2 * f`` exactly, with f = rms(ref) / max|ref|, a property of the
reference alone. For uniform(-1, 1) inputs an output element sums L products of variance 1/9 each, and
max|ref| is the largest of n near-Gaussian values, so f is about 1/sqrt(2 ln n). CPU-derived
(``tests/core/test_verify_metric.py``; run it as a script for the tables): the numpy float64
reference gives f = 0.17-0.25 for ResNet-sized outputs (n = 1e5..2e7), 0.31-0.33 for tiny outputs
(depthwise W, n = 288) and two-term sums; a Gaussian model of each problem's f, within 10% of those
(up to 20% low for sums of < 20 terms, hence a 1.25 safety factor on conversions), gives f = 0.09-0.36
over the 2880 problems the shipped H100 FindDB had when the table below was made (median 0.21; lowest for
stride-2 1x1 backward data, whose dx is 3/4 zeros), and 0.09-0.46 over its 6703 problems since session-nov27b
(median 0.21; above 0.36 only for 22 problems of MobileNetV3's squeeze-excitation 1x1 convolutions at N=1,
whose outputs have 24-120 elements); 0.08-0.46 over its 8758 problems since session dec03a's random layers (below
0.09 only a stride-4 5x1 backward data, 0.080). So an RMS is 2-10x, typically 4-6x, smaller than the relative L2 error.

**Tolerances** (``tolerance_for``): an output passes when ``rms <= tol`` and ``max_abs <= 10 * tol``
(``ELEMENT_MULTIPLE``), with ``tol = base + 2^-24 * sqrt(L)`` (``ACCUMULATION``):

- ``2^-24 sqrt(L)``: a float32 sum of L terms per output element (``reduction_length``: F C/G x taps,
  B K/G x taps, W N x output pixels) has a relative error of about 2^-24 sqrt(L/6), an RMS of at most
  ~0.15 x 2^-24 sqrt(L): this term keeps a ~7x margin over it. It lets cuDNN's engine 17 pass its
  2.1M-term W reductions (rel_l2 7.1e-5) without loosening small problems; it plays the part of
  MIOpen's x10 factors for implicit GEMM and Winograd W.
- ``base`` per (data type, family, direction), RMS. "Measured" is the worst relative L2 error in the
  shipped H100 FindDB (its 14312 verified records when this table was made, GPU: ResNet-50/101,
  Inception-v3, MobileNet-v2, VGG-16, U-Net; N = 32 and 1; FP32 and FP16; NCHW and NHWC; the 604 Hopper
  implicit-GEMM records added since stay within the FP16 implicit GEMM rows, worst rel_l2 2.2e-4), converted with that problem's f x 1.25 (CPU);
  "margin" is the tolerance (base + sqrt(L) term) over that RMS for the record with the least margin.
  TF32 and BF16 are not in the shipped DB: their rows come from the GPU tests' figures, converted at
  the largest f (0.45 with the safety factor), and are CPU-derived estimates.

  =====  ============================  ======  ======  ======================================  ======
  dtype  family                        F, B    W       measured rel_l2 -> RMS                  margin
  =====  ============================  ======  ======  ======================================  ======
  FP32   direct, gemm, implicit GEMM,  1.5e-6  3e-6    F 2.1e-6 -> 5.3e-7 (L = 13824)          16
         depthwise                                     B 1.7e-6 -> 4.5e-7; W 2.8e-6 -> 1.0e-6  16, 21
  FP32   winograd                      3e-6    3e-6    F(4,3) 7.7e-6 -> 2.0e-6 (C = 1536,      5.1
                                                       grows ~sqrt(C)); B 6.5e-6 -> 1.7e-6     5.0
  FP32   fft                           3e-6    3e-6    5.0e-7 -> 1.4e-7                        35
  FP32   cudnn (its Winograd, FFT and  3e-6    1.5e-5  F 2.1e-6 -> 5.3e-7; B 1.7e-6 -> 3.9e-7  19, 23
         split-K engines)                              W 7.0e-5 -> 2.1e-5 (L = 2.1M)           4.9
  TF32   all (FP32 data, TF32 math)    2.5e-3  2.5e-3  1e-4..1e-3 (576-term sums) -> 4.5e-4    5.5
  FP16   direct, gemm, implicit GEMM,  5e-4    5e-4    output rounding 2.1e-4 -> 6.7e-5;       7.4
         depthwise                                     GEMM B 3.0e-4 -> 8.8e-5                 5.7
                                                       W 2.3e-4 -> 1.0e-4 (n = 128)            5.0
  FP16   winograd, fft                 1e-3    1e-3    2.1e-4 -> 6.0e-5                        16
  FP16   cudnn                         1e-3    4e-3    F/B 3.0e-4 -> 9.5e-5                    10.6
                                                       grouped W (engine 61) 1.6e-3 -> 6.7e-4  6.0
  BF16   direct, gemm, implicit GEMM,  5e-3    5e-3    output rounding 1.7e-3..2.4e-3          4.6
         depthwise                                     -> 1.1e-3
  BF16   winograd, fft, cudnn          1e-2    1e-2    rounding as above                       9
                                               (cudnn  cudnn W as FP16's, 7.6 x rounding:      4.9
                                               4e-2)   1.8e-2 -> 8.2e-3
  =====  ============================  ======  ======  ======================================  ======

  Since session-nov27b the shipped DB holds 30939 records (eight more torchvision models), and the least
  margins are lower: 3.2-3.5x in the FP16 F/B GEMM, implicit GEMM and Hopper rows (MobileNetV3's
  squeeze-excitation 1x1 convolutions at N=1, 24-120 output elements, whose relative L2 error of 2.5e-4..2.9e-4
  is the FP16 output rounding alone and whose f, 0.43-0.46, is the highest of any problem), 3.7x in FP16 cuDNN W
  (MobileNetV3's 16-channel depthwise W at 112 x 112, NCHW, rel_l2 2.5e-3) and 4.3x in BF16 B. Each record's own
  RMS, measured on the GPU, passed; only this CPU estimate of the margin narrowed.

  MIOpen's driver (``GetDefaultTolerance``): FP32 1.5e-6, W twice that, x10 for implicit GEMM and FP32
  Winograd W; FP16 8.2e-3; BF16 8 x that (6.6e-2). The FP32 bases here are MIOpen's; FP16 and BF16 are
  5-16x tighter than MIOpen's.
- The element bound: a correct kernel's worst element should be ~6-10x its RMS (Gaussian-like errors
  over up to 1e8 elements), or its output rounding (2^-11 for FP16, 2^-8 for BF16, of max|ref|); 10x
  the tolerance keeps 5x or more over both. No stored record measured it: ``bench/verify_errors.py``
  reports max_abs / RMS per family on the GPU. One element off by 0.1 of the output's standard deviation
  fails at FP32 and FP16, by 0.3 of it at BF16.

``TOLERANCES`` and ``tolerance`` keep the relative-L2 bounds of earlier versions (FP32 1e-5/1e-4,
FP16 2e-3..5e-3, BF16 1e-2..2e-2) for the per-solver GPU tests that compare a relative L2 error; find,
tune and ``miofind run -V 1`` check ``tolerance_for`` through ``Harness.check``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

# BASE_RMS[dtype][family] = (F and B, W); families not listed use "default". TF32: FP32 data, TF32 math.
BASE_RMS: dict[str, dict[str, tuple[float, float]]] = {
    "FP32": {"default": (1.5e-6, 3e-6), "winograd": (3e-6, 3e-6), "fft": (3e-6, 3e-6), "cudnn": (3e-6, 1.5e-5)},
    "TF32": {"default": (2.5e-3, 2.5e-3)},
    "FP16": {"default": (5e-4, 5e-4), "winograd": (1e-3, 1e-3), "fft": (1e-3, 1e-3), "cudnn": (1e-3, 4e-3)},
    "BF16": {"default": (5e-3, 5e-3), "winograd": (1e-2, 1e-2), "fft": (1e-2, 1e-2), "cudnn": (1e-2, 4e-2)},
}
ACCUMULATION = 2.0 ** -24      # per sqrt(term) of a float32 sum (see the module docstring)
ELEMENT_MULTIPLE = 10.0        # max_abs <= ELEMENT_MULTIPLE * the RMS tolerance

# The relative-L2 bounds of earlier versions: TOLERANCES[dtype][family] = (F and B, W)
TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "FP32": {"default": (1e-5, 1e-4), "winograd": (1e-4, 1e-4), "fft": (1e-4, 1e-4), "cudnn": (1e-4, 1e-4)},
    "TF32": {"default": (5e-3, 5e-3)},        # FP32 data, TF32 tensor-core math (10-bit mantissa)
    "FP16": {"default": (2e-3, 4e-3), "winograd": (5e-3, 5e-3), "fft": (5e-3, 5e-3), "cudnn": (5e-3, 5e-3)},
    "BF16": {"default": (1e-2, 2e-2), "winograd": (2e-2, 2e-2), "fft": (2e-2, 2e-2), "cudnn": (2e-2, 2e-2)},
}


def _row(table, dtype: str, family: str, direction: str, math_mode: str) -> float:
    row = table["TF32" if (dtype == "FP32" and math_mode == "tf32") else dtype]
    fb, w = row.get(family, row["default"])
    return w if direction == "W" else fb


def tolerance(dtype: str, family: str, direction: str, math_mode: str = "strict") -> float:
    """The relative-L2 bound of earlier versions (``TOLERANCES``), for tests comparing ``rel_error``."""
    return _row(TOLERANCES, dtype, family, direction, math_mode)


@dataclass(frozen=True)
class Errors:
    """An output's errors against the float64 reference (see the module docstring); inf for an
    output with a non-finite element (unwritten or overflowed)."""

    rel_l2: float
    rms: float
    max_abs: float

    def __str__(self) -> str:
        return f"RMS {self.rms:.3g}, max element {self.max_abs:.3g} (of max|ref|), relative L2 {self.rel_l2:.3g}"


INFINITE = Errors(math.inf, math.inf, math.inf)


@dataclass(frozen=True)
class Tolerance:
    """Bounds on ``Errors.rms`` and ``Errors.max_abs`` (both relative to max|ref|)."""

    rms: float
    element: float

    def failure(self, e: Errors) -> str | None:
        """Why ``e`` fails these bounds (one line), or None when it passes; NaN fails."""
        if not e.rms <= self.rms:
            return f"RMS error {e.rms:.3g} exceeds {self.rms:.2g} ({e})"
        if not e.max_abs <= self.element:
            return f"max element error {e.max_abs:.3g} exceeds {self.element:.2g} ({e})"
        return None


def reduction_length(problem) -> int:
    """The number of products summed into one output element, at most: F C/G x filter taps, B K/G x
    filter taps, W N x output pixels (of the problem as solvers see it, ``as_conv``)."""
    p = problem.as_conv()
    if p.direction == "W":
        return p.n * math.prod(p.out_size)
    return (p.c if p.direction == "F" else p.k) // p.groups * math.prod(p.filter_size)


def tolerance_for(problem, family: str) -> Tolerance:
    """The bounds a solution of ``family`` must meet on ``problem`` (table and derivation: the module
    docstring)."""
    p = problem.as_conv()
    base = _row(BASE_RMS, p.dtype, family, p.direction, p.math)
    tol = base + ACCUMULATION * math.sqrt(reduction_length(p))
    return Tolerance(tol, ELEMENT_MULTIPLE * tol)


# -- device arrays in the problem's storage type (BF16 is stored as raw 16-bit words) -------

def _xp(a):
    """numpy or cupy, whichever ``a`` belongs to (numpy without importing cupy)."""
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def random_array(shape, dt: str, rng, scale: float = 1.0):
    """Uniform(-scale, scale) values, never zeros, in the storage type of ``dt`` (CuPy)."""
    import cupy

    f = rng.uniform(-scale, scale, size=shape, dtype=cupy.float32)
    if dt == "BF16":
        return f32_to_bf16_bits(f)
    from .tensors import numpy_dtype

    return f.astype(numpy_dtype(dt))


def f32_to_bf16_bits(f):
    import cupy

    bits = cupy.ascontiguousarray(f, dtype=cupy.float32).view(cupy.uint32)
    rounded = (bits + cupy.uint32(0x7FFF) + ((bits >> 16) & cupy.uint32(1))) >> 16
    return rounded.astype(cupy.uint16)


def to_float64(a, dt: str):
    """float64 values of an array in the storage type of ``dt`` (numpy or CuPy)."""
    xp = _xp(a)
    if dt == "BF16" and a.dtype in (xp.uint16, xp.int16):
        return (a.view(xp.uint16).astype(xp.uint32) << 16).view(xp.float32).astype(xp.float64)
    return a.astype(xp.float64)


def _storage_dtype(dt: str):
    """The numpy dtype an array of ``dt`` is stored in (FP64 included), or None for other names."""
    from .tensors import numpy_dtype

    try:
        return numpy_dtype(dt)
    except ValueError:
        return None


def poison(a, dt: str) -> None:
    """Fill with NaN (quiet-NaN bit pattern for 16-bit storage)."""
    if dt == "BF16" and a.dtype.itemsize == 2 and a.dtype.kind in "ui":
        a.view(np.uint16).fill(0x7FC0)
    else:
        a.fill(np.nan)


CHUNK = 1 << 26   # elements per step of errors_of (512 MiB of float64)
ERR_BLOCK = 256   # threads per block of the error kernel (kernels_src/verify_errors.cu)
ERR_GRID = 1024   # at most this many blocks: the host sums that many partials
ERR_SOURCE = "verify_errors.cu"


def error_kernel_info(dt: str):
    """The ``KernelInfo`` of the one-pass error kernel for outputs stored as ``dt`` (FP32, FP16,
    BF16, FP64); its launch geometry is set per call."""
    from .solver import KernelInfo
    from .tensors import CUDA_TYPES

    return KernelInfo(ERR_SOURCE, "output_errors", (1, 1, 1), (ERR_BLOCK, 1, 1),
                      macros=(("DATA_T", CUDA_TYPES[dt]), ("ACC_T", "double"), ("ERR_BLOCK", str(ERR_BLOCK))))


@functools.lru_cache(maxsize=None)
def _error_kernel(dt: str, device: int):
    from .compile import compile_kernel

    return compile_kernel(error_kernel_info(dt))


def _errors_on_gpu(out, dt: str, ref64) -> Errors:
    """``errors_of`` for contiguous CuPy arrays: one kernel over both (no temporaries), then one copy
    of its per-block partials (one synchronisation), summed on the host in float64."""
    import cupy

    n = out.size
    blocks = max(1, min(ERR_GRID, -(-n // (ERR_BLOCK * 8))))
    part = cupy.empty((blocks, 4), dtype=cupy.float64)
    _error_kernel(dt, cupy.cuda.Device().id)((blocks,), (ERR_BLOCK,), (out, ref64, np.int64(n), part))
    p = part.get()
    sq_err = float(p[:, 0].sum())
    if not math.isfinite(sq_err):         # an unwritten (NaN) or overflowed element
        return INFINITE
    return _errors(sq_err, float(p[:, 2].sum()), float(p[:, 1].max()), float(p[:, 3].max()), n)


def errors_of(out, dt: str, ref64) -> Errors:
    """``Errors`` of ``out`` (storage type of ``dt``) against the float64 ``ref64``. CuPy arrays,
    both contiguous and of one shape: one pass of the error kernel (``kernels_src/verify_errors.cu``).
    Else (numpy, or strided views) in chunks with one float64 temporary of a chunk's size (not
    full-size copies)."""
    xp = _xp(out)
    n = out.size
    if xp is not np and n and out.shape == ref64.shape and ref64.dtype == np.float64 \
            and out.flags.c_contiguous and ref64.flags.c_contiguous and out.dtype == _storage_dtype(dt):
        return _errors_on_gpu(out, dt, ref64)
    o, r = out.reshape(-1), ref64.reshape(-1)
    sq_err = sq_ref = max_err = max_ref = 0.0
    for i in range(0, n, CHUNK):
        d, rc = to_float64(o[i:i + CHUNK], dt), r[i:i + CHUNK]   # d: a fresh copy
        d -= rc
        se = float(xp.vdot(d, d))
        if not math.isfinite(se):         # an unwritten (NaN) or overflowed element
            return INFINITE
        sq_err += se
        sq_ref += float(xp.vdot(rc, rc))
        max_err = max(max_err, float(d.max()), -float(d.min()))
        max_ref = max(max_ref, float(rc.max()), -float(rc.min()))
    return _errors(sq_err, sq_ref, max_err, max_ref, n)


def errors(out64, ref64) -> Errors:
    """``Errors`` of a float64 output (numpy or CuPy)."""
    return errors_of(out64, "FP64", ref64)


def _errors(sq_err: float, sq_ref: float, max_err: float, max_ref: float, n: int) -> Errors:
    if n == 0 or sq_err == 0.0:
        return Errors(0.0, 0.0, 0.0)
    if max_ref == 0.0:            # an all-zero reference: only an all-zero output passes
        return INFINITE
    return Errors(math.sqrt(sq_err / sq_ref), math.sqrt(sq_err / n) / max_ref, max_err / max_ref)


def rel_error(out64, ref64) -> float:
    """Relative L2 error; inf when out has any non-finite element (unwritten or overflowed)."""
    return errors(out64, ref64).rel_l2
