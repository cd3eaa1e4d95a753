"""The two GPU float64 references against each other and against the CPU one (GPU): the harness's GEMM
reference (one float64 GEMM per filter tap, batched over groups, in batch chunks) and the naive solver's
float64 kernel, on every shared shape, direction and layout, transposed and fused problems included."""

from __future__ import annotations

import numpy as np
import pytest

from miofind.problem import ProblemDescription
from tests.shapes import SHAPES, layouts_for

pytestmark = pytest.mark.gpu


def _inputs(p, seed):
    import cupy

    rng = cupy.random.default_rng(seed)
    a_shape, b_shape, _ = p.io_shapes()
    bias = rng.standard_normal(p.k) if p.bias else None
    return rng.standard_normal(a_shape), rng.standard_normal(b_shape), bias


def _both(p, seed=0, max_bytes=None):
    import cupy

    from miofind import harness

    a, b, bias = _inputs(p, seed)
    naive = harness.reference_invoker_for_kind(p, "naive").output(p, a, b, bias)
    if max_bytes is None:
        gemm = harness.Reference("gemm").output(p, a, b, bias)
    else:
        from miofind.reference import conv_reference
        gemm = conv_reference(p, a, b, bias, max_bytes=max_bytes)
    assert isinstance(gemm, cupy.ndarray) and gemm.shape == naive.shape == p.io_shapes()[2]
    return cupy.asnumpy(gemm), cupy.asnumpy(naive), (a, b, bias)


def _close(x, y):
    assert np.isfinite(x).all() and np.isfinite(y).all()
    scale = max(1.0, float(np.abs(y).max()))
    np.testing.assert_allclose(x, y, rtol=1e-11, atol=1e-11 * scale)


# wide groups, which take the reference's warp-per-output forward kernel channels-last (REFERENCE_FWD_WARP_CPG and
# REFERENCE_FWD_WARP_MACS), at a channel count a warp's 32 lanes do not divide, strided, dilated, grouped, 2D and 3D
WIDE = {"wide_s2": dict(n=2, c=80, k=24, in_size=(9, 11), filter_size=3, pads=1, strides=2),
        "wide_g2_dil": dict(n=2, c=96, k=16, in_size=(10, 9), filter_size=3, pads=2, dilations=2, groups=2),
        "wide_3d": dict(n=1, c=40, k=8, in_size=(4, 6, 5), filter_size=3, pads=1)}


@pytest.mark.parametrize("name", sorted(SHAPES) + sorted(WIDE))
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("channels_last", [False, True])
def test_gemm_reference_equals_the_naive_kernel(name, direction, channels_last):
    kw = {**SHAPES, **WIDE}[name]
    layout = layouts_for(kw)[int(channels_last)]
    p = ProblemDescription.make(direction, layout=layout, dtype="FP32", **kw)
    gemm, naive, _ = _both(p)
    _close(gemm, naive)


@pytest.mark.parametrize("direction", "FBW")
def test_gemm_reference_in_batch_chunks(direction):
    from miofind.reference import reference_bytes_per_sample

    p = ProblemDescription.make(direction, n=5, c=12, k=8, in_size=(11, 10), filter_size=3, pads=1, strides=(2, 1),
                                groups=2, layout="NHWC")
    gemm, naive, _ = _both(p, seed=1, max_bytes=2 * reference_bytes_per_sample(p))
    _close(gemm, naive)


@pytest.mark.parametrize("direction", "FBW")
def test_gemm_reference_of_a_transposed_problem(direction):
    p = ProblemDescription.make(direction, n=2, c=6, k=4, in_size=(5, 6), filter_size=3, pads=1, strides=2,
                                transposed=True, output_padding=1)
    gemm, naive, _ = _both(p, seed=2)
    _close(gemm, naive)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_gemm_reference_of_a_fused_problem(activation):
    p = ProblemDescription.make("F", n=2, c=8, k=16, in_size=(9, 9), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16", bias=1, activation=activation)
    gemm, naive, _ = _both(p, seed=3)
    _close(gemm, naive)


def test_gemm_reference_equals_the_cpu_reference():
    import cupy

    from miofind.reference import conv_reference

    p = ProblemDescription.make("W", n=3, c=6, k=9, in_size=(8, 7), filter_size=(3, 2), pads=(1, 0),
                                dilations=(1, 2), groups=3, layout="NHWC")
    gemm, _, (a, b, _) = _both(p, seed=4)
    _close(gemm, conv_reference(p, cupy.asnumpy(a), cupy.asnumpy(b)))


def test_a_harness_with_the_gemm_reference_verifies_a_solver(monkeypatch):
    """A harness takes the GEMM reference where it is chosen, and a solver's output passes against it."""
    from miofind import harness
    from miofind.invokers import build_invoker
    from miofind.registry import get_solver

    monkeypatch.setenv("MIOFIND_REFERENCE", "gemm")
    p = ProblemDescription.from_key("64-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-F")
    assert harness.reference_kind(p) == "gemm"
    h = harness.Harness(p, verify=True, seed=5)
    s = get_solver("ConvDirectNaiveConvFwd")
    sol = s.get_solution(p, None)
    m = h.measure(build_invoker(p, sol), h.workspace(sol.workspace_bytes), s.family, 1, 2)
    assert m.max_error is not None and m.max_error < 1e-5
