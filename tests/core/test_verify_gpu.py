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


def _hash_uniform_model(key: int, offset: int, n: int, low: float, high: float) -> np.ndarray:
    """harness_uniform.cu's values in numpy (uint64 arithmetic wraps as the kernel's does)."""
    from miofind.verify import _mix64

    with np.errstate(over="ignore"):
        z = np.uint64(key) + (np.uint64(offset) + np.arange(n, dtype=np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
    h = np.array([_mix64(int(v)) for v in z], dtype=np.uint64)
    m = 2 * (h >> np.uint64(40)).astype(np.int64) + 1 - (1 << 24)
    mid, half = (low + high) / 2.0, (high - low) / 2.0
    return (mid + half * (m.astype(np.float64) * (1.0 / 16777216.0))).astype(np.float32)


# sizes: one partial block, and more elements than one grid-stride pass of the capped grid
@pytest.mark.parametrize("n", [7, 4096 * 256 + 5])
def test_hash_rng_draws_equal_the_model_and_are_never_zero(n):
    from miofind.verify import HashRNG

    rng = HashRNG(12345)
    first = rng.uniform(-1.0, 1.0, size=(n,), dtype=np.float32).get()
    second = rng.uniform(-4.0, 4.0, size=(n,)).get()
    idx = np.unique(np.r_[0:7, n - 7:n, np.linspace(0, n - 1, 200).astype(np.int64)])
    np.testing.assert_array_equal(first[idx], _hash_uniform_model(rng.key, 0, n, -1.0, 1.0)[idx])
    np.testing.assert_array_equal(second[idx], _hash_uniform_model(rng.key, n, n, -4.0, 4.0)[idx])
    assert rng.offset == 2 * n
    for v, s in ((first, 1.0), (second, 4.0)):
        assert np.all(v != 0) and np.all(np.abs(v) < s)
    if n > 10**6:   # uniform: mean ~0, variance ~s^2/3, and the two draws are not the same stream
        assert abs(first.mean()) < 5e-3 and abs(first.var() - 1 / 3) < 5e-3
        assert abs(np.corrcoef(first, second / 4.0)[0, 1]) < 5e-3
    again = HashRNG(12345).uniform(-1.0, 1.0, size=(n,)).get()
    np.testing.assert_array_equal(again, first)
    assert not np.array_equal(HashRNG(12346).uniform(-1.0, 1.0, size=(n,)).get(), first)


@pytest.mark.parametrize("dt", ["FP32", "FP16", "BF16"])
def test_harness_inputs_are_hashed_uniform_and_never_zero(dt):
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.verify import to_float64

    p = ProblemDescription.make("F", n=2, c=8, k=16, in_size=(9, 9), filter_size=3, dtype=dt)
    h = Harness(p, seed=5)
    a = to_float64(h.a, dt).get()
    assert np.all(a != 0) and np.all(np.abs(a) <= 1.0) and a.std() > 0.5
    h2 = Harness(p, seed=5)
    assert np.array_equal(to_float64(h2.a, dt).get(), a) and np.array_equal(to_float64(h2.b, dt).get(),
                                                                            to_float64(h.b, dt).get())
