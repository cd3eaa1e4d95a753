"""The one-pass error kernel (``verify.errors_of`` on CuPy arrays) against the numpy path (GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from miofind.verify import ERR_BLOCK, ERR_GRID, errors_of

pytestmark = pytest.mark.gpu


def _out(ref: np.ndarray, dt: str, rng) -> np.ndarray:
    noisy = (ref + rng.standard_normal(ref.size).reshape(ref.shape) * 1e-3).astype(np.float32)
    if dt == "BF16":
        return (noisy.view(np.uint32) >> 16).astype(np.uint16)
    return noisy.astype({"FP32": np.float32, "FP16": np.float16, "FP64": np.float64}[dt])


# sizes: one partial block, one element past a block, and more elements than one grid-stride step
@pytest.mark.parametrize("n", [7, ERR_BLOCK * 8 + 1, ERR_BLOCK * 8 * ERR_GRID * 2 + 33])
@pytest.mark.parametrize("dt", ["FP32", "FP16", "BF16", "FP64"])
def test_kernel_errors_equal_the_numpy_ones(dt, n):
    import cupy

    rng = np.random.default_rng(n)
    ref = rng.standard_normal(n).reshape(-1, 1) * 3.0
    out = _out(ref, dt, rng)
    want = errors_of(out, dt, ref)
    got = errors_of(cupy.asarray(out), dt, cupy.asarray(ref))
    assert want.rms > 0 and math.isfinite(want.rms)
    assert got.rms == pytest.approx(want.rms, rel=1e-10)
    assert got.rel_l2 == pytest.approx(want.rel_l2, rel=1e-10)
    assert got.max_abs == want.max_abs


@pytest.mark.parametrize("dt", ["FP32", "FP16", "BF16"])
def test_kernel_fails_an_unwritten_or_overflowed_element(dt):
    import cupy

    from miofind.verify import poison

    rng = np.random.default_rng(5)
    ref = rng.standard_normal(100_003)
    for where in (0, 50_000, 100_002):
        out = cupy.asarray(_out(ref, dt, rng))
        one = out[where:where + 1]
        poison(one, dt)                  # one element left as the poison
        e = errors_of(out, dt, cupy.asarray(ref))
        assert math.isinf(e.rms) and math.isinf(e.max_abs), (dt, where, e)
    out = cupy.asarray(_out(ref, "FP32", rng))
    out[17] = cupy.inf
    assert math.isinf(errors_of(out, "FP32", cupy.asarray(ref)).rms)
    zero = cupy.zeros(64)
    assert errors_of(cupy.zeros(64, dtype=cupy.float32), "FP32", zero).rms == 0.0
    assert math.isinf(errors_of(cupy.full(64, 1e-30, dtype=cupy.float32), "FP32", zero).rms)


def test_a_strided_view_takes_the_chunked_path():
    import cupy

    rng = np.random.default_rng(6)
    ref = rng.standard_normal((64, 32))
    out = _out(ref, "FP32", rng)
    want = errors_of(out[:, ::2], "FP32", ref[:, ::2])
    got = errors_of(cupy.asarray(out)[:, ::2], "FP32", cupy.asarray(ref)[:, ::2])
    assert got.rms == pytest.approx(want.rms, rel=1e-12) and got.max_abs == want.max_abs
