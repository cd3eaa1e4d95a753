"""Winograd family: what it claims over tests/shapes.py and padding/tile-edge shapes of its own,
pinned on the CPU with the rejection reasons and the reported workspace; on the GPU every claimed
case against the numpy float64 reference with poisoned outputs, accuracy at large C against the
documented bounds, strict FP32 even when the cuBLAS handle allows TF32, TF32 math, transposed
problems, unaligned outputs, a poisoned workspace, and a non-default stream."""

import numpy as np
import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from shapes import DTYPES, SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import solvers

IDS = ("ConvWinograd3x3F23Fwd", "ConvWinograd3x3F43Fwd", "ConvWinograd3x3F23Bwd", "ConvWinograd3x3F43Bwd")
WINOGRAD = [s for s in solvers() if s.family == "winograd"]

# tile edges (Ho, Wo not multiples of 2 or 4, or multiples of 4: the vector-store path), every
# padding from 0 to 3 (backward pads 2 - p are then negative), tiny images, groups
EXTRA = {
    "pad0": dict(n=2, c=4, k=6, in_size=(9, 10), filter_size=3, pads=0),
    "pad2": dict(n=1, c=3, k=5, in_size=(7, 8), filter_size=3, pads=2),
    "pad3_asym": dict(n=1, c=3, k=5, in_size=(6, 9), filter_size=3, pads=(3, 1)),
    "pad0_2": dict(n=2, c=6, k=4, in_size=(8, 11), filter_size=3, pads=(0, 2)),
    "one_tile": dict(n=1, c=1, k=1, in_size=(3, 3), filter_size=3, pads=0),
    "pixel": dict(n=1, c=2, k=3, in_size=(1, 1), filter_size=3, pads=1),
    "groups3": dict(n=2, c=9, k=6, in_size=(8, 8), filter_size=3, pads=1, groups=3),
    "wo_mult4": dict(n=2, c=5, k=6, in_size=(10, 14), filter_size=3, pads=1),
    "wide_c": dict(n=1, c=40, k=36, in_size=(12, 20), filter_size=3, pads=1, groups=4),
}
ALL_SHAPES = {**SHAPES, **EXTRA}
GRID = claim_grid(WINOGRAD, ALL_SHAPES)
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"ConvWinograd3x3F23Fwd": 84, "ConvWinograd3x3F43Fwd": 84, "ConvWinograd3x3F23Bwd": 84,
            "ConvWinograd3x3F43Bwd": 84}
ACCEPTED_DIGEST = "5d3384bb"


def _solver(sid):
    return next(s for s in WINOGRAD if s.id == sid)


def test_all_registered():
    assert {s.id for s in WINOGRAD} == set(IDS)


def test_winograd_claims_pinned():
    """Each solver takes every 2D 3x3 stride-1 dilation-1 case of its direction, and nothing else."""
    _, rejected = assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)
    for c, why in rejected:
        kw = c.kw
        assert len(kw["in_size"]) == 3 or kw.get("filter_size") != 3 or kw.get("strides", 1) != 1 \
            or kw.get("dilations", 1) != 1, f"{c.id}: rejected a 2D 3x3 stride-1 problem: {why}"


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_winograd_solver(claim):
    check_claim(claim)


@pytest.mark.parametrize("sid", IDS)
def test_rejections_carry_reasons(sid):
    s = _solver(sid)
    d = next(iter(s.directions))
    base = dict(n=1, c=4, k=4, in_size=(8, 8), filter_size=3, pads=1)
    assert s.applicability(ProblemDescription.make(d, **base))
    bad = {
        "3D": dict(base, in_size=(4, 8, 8)),
        "5x5": dict(base, filter_size=5),
        "stride": dict(base, strides=2),
        "dilation": dict(base, dilations=2),
    }
    for name, kw in bad.items():
        a = s.applicability(ProblemDescription.make(d, **kw))
        assert not a and a.reason, name
    mixed = ProblemDescription.make(d, layout="NCHW", out_layout="NHWC", **base)
    assert "layout" in s.applicability(mixed).reason
    other = ProblemDescription.make({"F": "B", "B": "F"}[d], **base)
    assert "direction" in s.applicability(other).reason
    assert "direction" in s.applicability(ProblemDescription.make("W", **base)).reason


@pytest.mark.gpu
@pytest.mark.parametrize("sid,bound", [("ConvWinograd3x3F23Fwd", 2e-6), ("ConvWinograd3x3F43Fwd", 1e-5),
                                       ("ConvWinograd3x3F23Bwd", 2e-6), ("ConvWinograd3x3F43Bwd", 1e-5)])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_fp32_accuracy_large_c(sid, bound, layout):
    """C=256: the documented FP32 errors (5e-7 for F(2x2), 3e-6 for F(4x4)) with room for seeds;
    a TF32 GEMM would give 5e-4 / 3e-3."""
    s = _solver(sid)
    p = ProblemDescription.make(next(iter(s.directions)), n=2, c=256, k=192, in_size=(20, 18), filter_size=3,
                                pads=1, layout=layout)
    err, _ = check_solver(s, p, seed=7)
    assert err <= bound, f"{sid}: {err:.3g} > {bound:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("sid", IDS)
def test_strict_even_if_handle_allows_tf32(sid):
    import cupy
    from cupy_backends.cuda.libs import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    old = cublas.getMathMode(handle)
    cublas.setMathMode(handle, 3)  # CUBLAS_TF32_TENSOR_OP_MATH
    try:
        s = _solver(sid)
        p = ProblemDescription.make(next(iter(s.directions)), n=2, c=128, k=64, in_size=(16, 16), filter_size=3,
                                    pads=1)
        err, _ = check_solver(s, p, seed=3)
        assert cublas.getMathMode(handle) == 3, "the invoker did not restore the handle's math mode"
    finally:
        cublas.setMathMode(handle, old)
    assert err <= 1e-5, f"{sid}: {err:.3g}: strict FP32 problem computed with TF32"


@pytest.mark.gpu
@pytest.mark.parametrize("sid", IDS)
def test_tf32_math(sid):
    s = _solver(sid)
    p = ProblemDescription.make(next(iter(s.directions)), n=2, c=64, k=32, in_size=(16, 16), filter_size=3,
                                pads=1, math="tf32")
    assert s.applicability(p)
    err, tol = check_solver(s, p, seed=5)
    assert err <= tol


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("pads", [0, 1, 2])
def test_transposed(direction, pads):
    """A transposed problem reaches the opposite-direction solvers through as_conv()."""
    t = ProblemDescription.make(direction, n=2, c=6, k=4, in_size=(7, 9), filter_size=3, pads=pads,
                                transposed=True, groups=2)
    hit = [s for s in WINOGRAD if s.applicability(t)]
    assert len(hit) == 2
    for s in hit:
        err, tol = check_solver(s, t)
        assert err <= tol, (s.id, err)


@pytest.mark.gpu
@pytest.mark.parametrize("sid", IDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unaligned_output_poisoned_workspace_side_stream(sid, dtype):
    """Output one element past an aligned address (no vector stores), the workspace filled with
    NaN bytes (every workspace element is written before it is read), a non-blocking stream;
    elements around the output stay untouched. Every buffer is made and filled on the launch stream,
    which does not wait for the legacy default stream."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.reference import conv_reference
    from miofind.verify import poison, random_array, rel_error, to_float64, tolerance

    s = _solver(sid)
    p = ProblemDescription.make(next(iter(s.directions)), n=2, c=8, k=12, in_size=(12, 16), filter_size=3,
                                pads=1, dtype=dtype)
    sa, sb, so = p.io_shapes()
    sol = Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(p), None, False, p)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        rng = cupy.random.default_rng(11)
        a, b = random_array(sa, dtype, rng), random_array(sb, dtype, rng)
        size = int(np.prod(so))
        buf = cupy.empty(size + 2, dtype=a.dtype)
        poison(buf, dtype)
        out = buf[1:1 + size].reshape(so)
        ws = cupy.full(s.workspace_bytes(p), 0xFF, dtype=cupy.uint8)
        run_solution(sol, a, b, out, workspace=ws)
    stream.synchronize()
    ref = conv_reference(p, cupy.asnumpy(to_float64(a, dtype)), cupy.asnumpy(to_float64(b, dtype)))
    err = rel_error(to_float64(out, dtype), cupy.asarray(ref))
    assert err <= tolerance(dtype, "winograd", p.direction), err
    edges = to_float64(buf, dtype)
    assert bool(cupy.isnan(edges[0])) and bool(cupy.isnan(edges[-1])), "wrote outside the output"


@pytest.mark.parametrize("sid", IDS)
def test_workspace_reported_exactly(sid):
    s = _solver(sid)
    p = ProblemDescription.make(next(iter(s.directions)), n=3, c=10, k=14, in_size=(11, 13), filter_size=3, pads=1,
                                groups=2, layout="NHWC")
    sol = s.get_solution(p)
    assert sol.workspace_bytes == s.workspace_bytes(p) > 0
    assert len(sol.kernels) == 3 and not sol.prebuilt
