"""The verification metrics on the CPU: MIOpen's RMS against the relative L2 error, the factor that
converts one into the other for uniform(-1, 1) inputs, and the tolerances against what the shipped H100
FindDB measured.

``rms = rel_l2 * f`` with f = rms(ref) / max|ref|. An output element is a sum of L products of two
uniform(-1, 1) values (variance L/9), so f follows from the problem's shape: ``factor_model`` takes
the mean of L over the output for rms(ref) and the median of the maximum of n independent Gaussians
for max|ref|; ``factor_exact`` computes the numpy float64 reference. Run as a script for the tables
quoted in ``miofind/verify.py``: ``python tests/core/test_verify_metric.py``.
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from miofind.problem import ProblemDescription
from miofind.reference import conv_reference
from miofind.verify import (ACCUMULATION, ELEMENT_MULTIPLE, Errors, Tolerance, errors, errors_of, reduction_length,
                            rel_error, tolerance, tolerance_for)

SHIPPED = Path(__file__).resolve().parents[2] / "finddb" / "sm_90-132.sqlite"
# The model's f is up to ~20% low for sums of fewer than ~20 terms (their tails are lighter than a
# Gaussian's); conversions of measured errors multiply it by this.
MODEL_SAFETY = 1.25


# -- the factor f = rms(ref) / max|ref| ------------------------------------------------------------

def _taps(n_out: int, taps: int, in_size: int, pad: int, stride: int, dil: int, direction: str) -> list[int]:
    """Per position along one spatial dimension of the output tensor of ``direction``, how many
    filter taps (F, B) or output positions (W) contribute."""
    if direction == "F":   # y[o] sums x[o*s - p + t*d] over taps t
        return [sum(0 <= o * stride - pad + t * dil < in_size for t in range(taps)) for o in range(n_out)]
    if direction == "B":   # dx[i] sums dy[o] over taps t with o*s = i + p - t*d
        return [sum((i + pad - t * dil) % stride == 0 and 0 <= (i + pad - t * dil) // stride < n_out
                    for t in range(taps)) for i in range(in_size)]
    return [sum(0 <= o * stride - pad + t * dil < in_size for o in range(n_out)) for t in range(taps)]  # dw[t]


@functools.lru_cache(maxsize=None)
def term_counts(problem: ProblemDescription) -> dict[int, int]:
    """{L: how many output elements sum L products} for the problem's output tensor."""
    p = problem.as_conv()
    dims = list(zip(p.out_size, p.filter_size, p.in_size, p.pads, p.strides, p.dilations))
    per = [np.array(_taps(*d, p.direction)) for d in dims]
    scale, copies = {"F": (p.c // p.groups, p.n * p.k), "B": (p.k // p.groups, p.n * p.c),
                     "W": (p.n, p.k * (p.c // p.groups))}[p.direction]
    counts = per[0]
    for a in per[1:]:
        counts = np.multiply.outer(counts, a)
    vals, mult = np.unique(counts.ravel() * scale, return_counts=True)
    return {int(v): int(m) * copies for v, m in zip(vals, mult)}


@functools.lru_cache(maxsize=None)
def factor_model(problem: ProblemDescription) -> float:
    """f for uniform(-1, 1) inputs: sqrt(mean(L)/9) over the median of max|ref|, each element taken
    as an independent Gaussian of variance L/9 (see the module docstring)."""
    groups = term_counts(problem)
    n = sum(groups.values())
    rms = math.sqrt(sum(L * m for L, m in groups.items()) / n / 9)
    sig = [(math.sqrt(L / 9), m) for L, m in groups.items() if L > 0]

    def log_cdf(t: float) -> float:   # log P(max|ref| <= t)
        return sum(m * math.log1p(-math.erfc(t / (s * math.sqrt(2)))) for s, m in sig)

    lo, hi = 0.0, 100.0 * max(s for s, _ in sig)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if log_cdf(mid) < math.log(0.5) else (lo, mid)
    return rms / hi


def factor_exact(problem: ProblemDescription, seed: int = 0) -> float:
    """f of one draw of uniform(-1, 1) FP32 inputs, by the numpy float64 reference."""
    rng = np.random.default_rng(seed)
    a_shape, b_shape, _ = problem.io_shapes()
    a = rng.uniform(-1, 1, a_shape).astype(np.float32).astype(np.float64)
    b = rng.uniform(-1, 1, b_shape).astype(np.float32).astype(np.float64)
    ref = conv_reference(problem, a, b)
    return float(np.sqrt(np.mean(ref * ref)) / np.abs(ref).max())


# representative shapes (N reduced to keep the numpy reference to about a second each)
SHAPES = {
    "ResNet 3x3 64ch F": "64-56-56-3x3-64-56-56-4-1x1-1x1-1x1-0-NCHW-FP32-F",
    "ResNet 3x3 64ch B": "64-56-56-3x3-64-56-56-4-1x1-1x1-1x1-0-NCHW-FP32-B",
    "ResNet 3x3 64ch W": "64-56-56-3x3-64-56-56-4-1x1-1x1-1x1-0-NCHW-FP32-W",
    "ResNet 1x1 256->64 F": "256-56-56-1x1-64-56-56-2-0x0-1x1-1x1-0-NCHW-FP32-F",
    "stride-2 3x3 B": "128-28-28-3x3-128-14-14-4-1x1-2x2-1x1-0-NCHW-FP32-B",
    "depthwise 3x3 F": "32-112-112-3x3-32-112-112-4-1x1-1x1-1x1-0-NCHW-FP32-F_g32",
    "depthwise 3x3 W": "32-112-112-3x3-32-112-112-4-1x1-1x1-1x1-0-NCHW-FP32-W_g32",
    "two-term 1x1 F": "2-32-32-1x1-4-32-32-2-0x0-1x1-1x1-0-NCHW-FP32-F",
    "7x7 stem F": "3-224-224-7x7-64-112-112-1-3x3-2x2-1x1-0-NCHW-FP32-F",
}


def _p(key: str) -> ProblemDescription:
    return ProblemDescription.from_key(key)


# -- the metrics -----------------------------------------------------------------------------------

def test_rms_is_relative_l2_times_the_reference_factor():
    rng = np.random.default_rng(3)
    ref = rng.standard_normal(100_000) * 7.0
    out = ref + rng.standard_normal(ref.size) * 1e-5
    e = errors(out, ref)
    f = math.sqrt(np.mean(ref * ref)) / np.abs(ref).max()
    assert e.rms == pytest.approx(e.rel_l2 * f, rel=1e-12)
    assert e.rel_l2 == pytest.approx(np.linalg.norm(out - ref) / np.linalg.norm(ref), rel=1e-12)
    assert e.max_abs == pytest.approx(np.abs(out - ref).max() / np.abs(ref).max(), rel=1e-12)
    assert rel_error(out, ref) == e.rel_l2


def test_unwritten_or_overflowed_elements_fail_and_zero_reference_needs_zero_output():
    ref = np.ones(10)
    for bad in (np.nan, np.inf):
        out = ref.copy()
        out[3] = bad
        e = errors(out, ref)
        assert math.isinf(e.rms) and math.isinf(e.max_abs) and Tolerance(1.0, 1.0).failure(e)
    assert errors(np.zeros(4), np.zeros(4)) == Errors(0.0, 0.0, 0.0)
    assert math.isinf(errors(np.array([0.0, 1e-30]), np.zeros(2)).rms)
    assert Tolerance(1e-3, 1e-2).failure(Errors(math.nan, math.nan, math.nan)) is not None


def test_chunked_errors_equal_the_whole_array(monkeypatch):
    import miofind.verify as verify

    rng = np.random.default_rng(4)
    ref = rng.standard_normal(1000)
    out = (ref + rng.standard_normal(1000) * 1e-3).astype(np.float32)
    whole = errors_of(out, "FP32", ref)
    monkeypatch.setattr(verify, "CHUNK", 64)
    chunked = errors_of(out, "FP32", ref)
    assert chunked.rms == pytest.approx(whole.rms, rel=1e-12)
    assert chunked.rel_l2 == pytest.approx(whole.rel_l2, rel=1e-12) and chunked.max_abs == whole.max_abs
    bf16 = (out.view(np.uint32) >> 16).astype(np.uint16)  # truncated to BF16 words
    e = errors_of(bf16, "BF16", ref)
    assert 1e-3 < e.max_abs < 1e-2   # BF16's 8-bit mantissa, read back as float64


def test_one_wrong_element_fails_though_its_rms_and_relative_l2_pass():
    """The issue's case: one element off by the output's standard deviation among 25.7M has a relative
    L2 error of ~2e-4, which the old FP16 bound (2e-3) passed; here the element check fails it. The
    same output with rounding-level errors only passes."""
    p = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1, dtype="FP16")
    rng = np.random.default_rng(5)
    n = 25_690_112 // 32           # 1/32 of the outputs: the metrics scale to the full size below
    sigma = math.sqrt(reduction_length(p) / 9)
    ref = rng.standard_normal(n) * sigma
    out = ref * (1 + rng.uniform(-2 ** -11, 2 ** -11, n))    # FP16 output rounding
    tol = tolerance_for(p, "implicit_gemm")
    good = errors(out, ref)
    assert tol.failure(good) is None and good.max_abs < tol.element / 5
    out[12345] += sigma
    bad = errors(out, ref)
    full_rel_l2 = sigma / (sigma * math.sqrt(25_690_112))    # the same error in the full-size output
    assert full_rel_l2 < tolerance("FP16", "implicit_gemm", "F") / 5
    assert bad.rms < tol.rms and "max element error" in tol.failure(bad)


def test_reduction_length_per_direction():
    p = ProblemDescription.make("F", n=32, c=64, k=128, in_size=(56, 56), filter_size=3, pads=1, groups=2)
    assert reduction_length(p) == 32 * 9
    assert reduction_length(p.with_direction("B")) == 64 * 9
    assert reduction_length(p.with_direction("W")) == 32 * 56 * 56
    t = ProblemDescription.make("F", n=2, c=8, k=4, in_size=(5, 5), filter_size=3, strides=2, transposed=True)
    assert reduction_length(t) == 8 * 9   # a transposed F is the ordinary B of 8 output channels


def test_tolerance_table_is_ordered_and_grows_with_the_reduction():
    small = ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1)
    big_w = ProblemDescription.make("W", n=32, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1)
    for fam in ("direct", "gemm", "winograd", "fft", "implicit_gemm", "cudnn", "depthwise"):
        t = {dt: tolerance_for(ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8), filter_size=3,
                                                       pads=1, dtype=dt), fam).rms for dt in ("FP32", "FP16", "BF16")}
        assert t["FP32"] < t["FP16"] < t["BF16"], (fam, t)
        assert tolerance_for(small, fam).element == ELEMENT_MULTIPLE * tolerance_for(small, fam).rms
    assert tolerance_for(small, "direct").rms == pytest.approx(1.5e-6 + ACCUMULATION * math.sqrt(72))
    assert tolerance_for(big_w, "cudnn").rms > 8e-5 > 20 * tolerance_for(small, "cudnn").rms
    tf32 = ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1, math="tf32")
    assert tolerance_for(tf32, "cudnn").rms > 100 * tolerance_for(small, "cudnn").rms


# -- the conversion factor -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ResNet 3x3 64ch F", "ResNet 3x3 64ch W", "stride-2 3x3 B", "depthwise 3x3 W",
                                  "two-term 1x1 F"])
def test_factor_model_agrees_with_the_numpy_reference(name):
    p = _p(SHAPES[name])
    model, exact = factor_model(p), factor_exact(p)
    assert 0.15 < exact < 0.4
    assert exact / MODEL_SAFETY <= model <= exact * 1.1, (model, exact)


def _shipped_records():
    from miofind.db import FindDB
    from miofind.registry import get_solver

    if not SHIPPED.exists():
        pytest.skip("no shipped FindDB in this checkout")
    with FindDB(str(SHIPPED), readonly=True, immutable=True) as db:
        recs = [r for r in db.iter_records() if r.max_error is not None]
    return [(r, _p(r.problem_key), get_solver(r.solver_id).family) for r in recs]


def worst_per_row(records):
    """{(dtype, direction, family): (margin, record, f, estimated RMS, tolerance)} of the record with
    the smallest margin tolerance / estimated RMS in each row."""
    rows = {}
    for r, p, fam in records:
        f = factor_model(p) * MODEL_SAFETY
        est = r.max_error * f
        tol = tolerance_for(p, fam).rms
        dt = "TF32" if p.math == "tf32" else p.dtype
        k = (dt, p.as_conv().direction, fam)
        if k not in rows or tol / est < rows[k][0]:
            rows[k] = (tol / est, r, f, est, tol)
    return rows


def test_every_shipped_record_passes_the_new_tolerances_with_margin():
    """The verified records of the shipped FindDB (relative L2 errors measured on the GPU; 14312 when the
    tolerance table was made, 30939 since session-nov27b, 39858 since session dec03a's random layers, measured on an
    H200), converted to RMS by each problem's f (CPU), pass their
    tolerance at least 3x over (4x over the 14312; the verify docstring names the records below 4x since), and
    every problem's f lies in the range it states."""
    recs = _shipped_records()
    assert len(recs) > 39_000
    fs = [factor_model(p) for p in {p for _, p, _ in recs}]
    assert 0.08 < min(fs) and max(fs) < 0.47
    rows = worst_per_row(recs)
    tight = {k: round(v[0], 2) for k, v in rows.items() if v[0] < 3}
    assert not tight, tight


def main() -> None:
    print("f = rms(ref) / max|ref| for uniform(-1, 1) inputs (numpy float64 reference, one draw, and the model)\n")
    print(f"{'shape':24} {'key':58} {'n':>9} {'L mean':>8} {'exact':>6} {'model':>6}")
    for name, key in SHAPES.items():
        p = _p(key)
        g = term_counts(p)
        n = sum(g.values())
        mean_l = sum(L * m for L, m in g.items()) / n
        print(f"{name:24} {key:58} {n:9d} {mean_l:8.1f} {factor_exact(p):6.3f} {factor_model(p):6.3f}")
    recs = _shipped_records()
    fs = {p.key(): factor_model(p) for _, p, _ in recs}
    lo, hi = min(fs.values()), max(fs.values())
    print(f"\nshipped FindDB: {len(fs)} problems, model f {lo:.3f}..{hi:.3f} "
          f"(x{MODEL_SAFETY} for conversions: {lo * MODEL_SAFETY:.3f}..{hi * MODEL_SAFETY:.3f})")
    print(f"\nworst record per (dtype, direction, family): rel_l2 (GPU) x f x {MODEL_SAFETY} = estimated RMS, "
          "against tolerance_for(...).rms\n")
    print(f"{'row':28} {'rel_l2':>8} {'f':>6} {'est RMS':>8} {'tol':>8} {'margin':>7}  problem (solver)")
    for k, (margin, r, f, est, tol) in sorted(worst_per_row(recs).items()):
        print(f"{' '.join(k):28} {r.max_error:8.2g} {f:6.3f} {est:8.2g} {tol:8.2g} {margin:7.1f}  "
              f"{r.problem_key} ({r.solver_id})")


if __name__ == "__main__":
    sys.exit(main())


@pytest.mark.parametrize("dt", ["FP32", "FP16", "BF16", "FP64"])
def test_the_error_kernel_compiles_for_sm90(dt):
    """The one-pass error kernel of CuPy outputs (``verify.errors_of``) builds for every storage type."""
    from nvrtc_check import nvrtc_or_skip

    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    from miofind.verify import error_kernel_info

    assert nvrtc_compile(error_kernel_info(dt), arch="sm_90")[:4] == b"\x7fELF"
