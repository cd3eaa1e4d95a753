"""Verification: inputs, poisoning, the float64 reference and per-type/per-algorithm tolerances.

Errors are relative L2 norms, ||out - ref|| / ||ref||, against a float64 reference computed on
inputs already rounded to the problem's type, so the error measures the algorithm and the output
rounding, not the input rounding. Every output element is first poisoned with NaN; an element
the solver does not write stays NaN and fails the check.

Tolerance table (relative L2 error), one row per data type; ``W`` (backward weights) reduces over
N*Ho*Wo products and gets the looser column. Families not listed use the ``default`` entry.
Measured errors behind the rows (float64 reference, uniform(-1, 1) inputs): FP32 direct/GEMM
1e-7..5e-7, Winograd F(2,3) 2.6e-7 and F(4,3) 1.7e-6..3.1e-6 (grows ~sqrt(C)), FFT <= 4e-7; FP16
output rounding ~2e-4..3e-4; BF16 ~1.7e-3..2.4e-3. cuDNN's plan list includes its own Winograd,
FFT and split-reduction engines, hence the Winograd/FFT row for the cudnn family.
"""

from __future__ import annotations

import math

import numpy as np

# TOLERANCES[dtype][family] = (F and B, W)
TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "FP32": {"default": (1e-5, 1e-4), "winograd": (1e-4, 1e-4), "fft": (1e-4, 1e-4), "cudnn": (1e-4, 1e-4)},
    "TF32": {"default": (5e-3, 5e-3)},        # FP32 data, TF32 tensor-core math (10-bit mantissa)
    "FP16": {"default": (2e-3, 4e-3), "winograd": (5e-3, 5e-3), "fft": (5e-3, 5e-3), "cudnn": (5e-3, 5e-3)},
    "BF16": {"default": (1e-2, 2e-2), "winograd": (2e-2, 2e-2), "fft": (2e-2, 2e-2), "cudnn": (2e-2, 2e-2)},
}


def tolerance(dtype: str, family: str, direction: str, math_mode: str = "strict") -> float:
    row = TOLERANCES["TF32" if (dtype == "FP32" and math_mode == "tf32") else dtype]
    fb, w = row.get(family, row["default"])
    return w if direction == "W" else fb


# -- device arrays in the problem's storage type (BF16 is stored as raw 16-bit words) -------

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
    import cupy

    if dt == "BF16" and a.dtype in (cupy.uint16, cupy.int16):
        return (a.view(cupy.uint16).astype(cupy.uint32) << 16).view(cupy.float32).astype(cupy.float64)
    return a.astype(cupy.float64)


def poison(a, dt: str) -> None:
    """Fill with NaN (quiet-NaN bit pattern for 16-bit storage)."""
    if dt == "BF16" and a.dtype.itemsize == 2 and a.dtype.kind in "ui":
        a.view(np.uint16).fill(0x7FC0)
    else:
        a.fill(np.nan)


CHUNK = 1 << 26   # elements per step of rel_error_of (512 MiB of float64)


def rel_error_of(out, dt: str, ref64) -> float:
    """``rel_error(to_float64(out, dt), ref64)`` computed in chunks, so that verifying a large output
    needs two chunk-sized float64 temporaries rather than two full-size copies."""
    import cupy

    n = out.size
    if n <= CHUNK:
        return rel_error(to_float64(out, dt), ref64)
    o, r = out.reshape(-1), ref64.reshape(-1)
    num = den = 0.0
    for i in range(0, n, CHUNK):
        oc, rc = to_float64(o[i:i + CHUNK], dt), r[i:i + CHUNK]
        if not bool(cupy.isfinite(oc).all()):
            return math.inf
        num += float(cupy.sum((oc - rc) ** 2))
        den += float(cupy.sum(rc * rc))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return math.sqrt(num) / math.sqrt(den)


def rel_error(out64, ref64) -> float:
    """Relative L2 error; inf when out has any non-finite element (unwritten or overflowed)."""
    import cupy

    if not bool(cupy.isfinite(out64).all()):
        return math.inf
    den = float(cupy.linalg.norm(ref64))
    num = float(cupy.linalg.norm(out64 - ref64))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den
