"""im2col + GEMM family: what it claims over tests/shapes.py, pinned on the CPU with the workspace sizes
and the 64-bit index build's macros; on the GPU every claimed case against the float64 reference with
poisoned outputs, and family checks: both backward-weights strategies, batch chunking (a one-image
workspace cap), 64-bit kernel indices, a misaligned workspace, transposed problems, strict FP32 (no
TF32) versus TF32, determinism, and the 1x1 path's speed against a bare cuBLAS GEMM."""

import numpy as np
import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, claim_grid, params
from shapes import SHAPES, layouts_for
from miofind.problem import ProblemDescription
from miofind.registry import solvers

GEMM = [s for s in solvers() if s.family == "gemm"]
GRID = claim_grid(GEMM, SHAPES)
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"GemmFwd1x1_0_1": 6, "GemmFwdRest": 72, "GemmBwd1x1_stride1": 6, "GemmBwdRest": 72,
            "GemmWrw1x1_stride1": 6, "GemmWrwUniversal": 72}
ACCEPTED_DIGEST = "d5c7c7ed"


def test_gemm_claims_pinned():
    """Per direction, the 1x1 pad-0 stride-1 solver takes exactly those cases and the other solver the
    rest: every case has exactly one gemm solver."""
    acc, _ = assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)
    per_problem = {}
    for c in acc:
        per_problem.setdefault((c.direction, c.shape, c.dtype, c.layout), []).append(c.solver.id)
    assert len(per_problem) == len({(c.direction, c.shape, c.dtype, c.layout) for c in GRID})
    assert all(len(ids) == 1 for ids in per_problem.values()), per_problem


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_gemm_solver(claim):
    check_claim(claim)


# -- family checks: solutions built with the test-only get_solution options ----------------------

def _classes():
    from miofind.solvers.gemm_bwd1x1 import GemmBwd1x1
    from miofind.solvers.gemm_bwd_rest import GemmBwdRest
    from miofind.solvers.gemm_fwd1x1 import GemmFwd1x1
    from miofind.solvers.gemm_fwd_rest import GemmFwdRest
    from miofind.solvers.gemm_wrw1x1 import GemmWrw1x1
    from miofind.solvers.gemm_wrw_universal import GemmWrwUniversal
    return {"F": (GemmFwd1x1(), GemmFwdRest()), "B": (GemmBwd1x1(), GemmBwdRest()),
            "W": (GemmWrw1x1(), GemmWrwUniversal())}


def _pick(p):
    for s in _classes()[p.as_conv().direction]:
        if s.applicability(p):
            return s
    raise AssertionError(f"no gemm solver takes {p.key()}")


def _run(solver, p, seed=0, ws_offset=0, sol=None, **opts):
    """Build the solution (with ``opts``), run it on fresh inputs into a poisoned output; return
    (relative error, tolerance, output array, solution)."""
    import cupy

    from miofind.invokers import build_invoker, call as _call
    from miofind.reference import conv_reference
    from miofind.verify import poison, random_array, rel_error, to_float64, tolerance

    sol = sol or solver.get_solution(p, **opts)
    inv = build_invoker(p, sol)
    rng = cupy.random.default_rng(seed)
    sa, sb, so = p.io_shapes()
    dt = p.dtype
    a, b = random_array(sa, dt, rng), random_array(sb, dt, rng)
    out = cupy.empty(so, dtype=a.dtype)
    poison(out, dt)
    ws = None
    if sol.workspace_bytes:
        raw = cupy.empty(sol.workspace_bytes + ws_offset, dtype=cupy.uint8)
        raw.fill(0xFF)  # NaN patterns: a stale workspace must not leak into results
        ws = raw[ws_offset:]
    _call(inv, p, a, b, out, ws)
    cupy.cuda.get_current_stream().synchronize()
    ref = conv_reference(p, cupy.asnumpy(to_float64(a, dt)), cupy.asnumpy(to_float64(b, dt)))
    err = rel_error(to_float64(out, dt), cupy.asarray(ref))
    tol = tolerance(dt, solver.family, p.as_conv().direction, p.math)
    return err, tol, out, sol


FAMILY_SHAPES = {
    **SHAPES,
    "1x1_g2": dict(n=3, c=8, k=12, in_size=(5, 7), filter_size=1, groups=2),
    "1x1_s2": dict(n=2, c=8, k=6, in_size=(9, 8), filter_size=1, strides=2),
    "1x1_3d": dict(n=2, c=6, k=4, in_size=(3, 4, 5), filter_size=1),
    "3x3_s3_d2": dict(n=2, c=4, k=5, in_size=(17, 16), filter_size=3, pads=(2, 1), strides=3, dilations=(2, 3)),
    "3d_groups": dict(n=3, c=4, k=6, in_size=(4, 5, 6), filter_size=(2, 3, 1), pads=(1, 1, 0), strides=(1, 2, 1),
                      groups=2),
    "5x5_g3": dict(n=2, c=6, k=9, in_size=(11, 10), filter_size=5, pads=2, groups=3),
}
VARIANTS = [
    ("chunked", {"workspace_cap": 1}),
    ("batched", {"wrw_mode": "batched"}),
    ("concat", {"wrw_mode": "concat"}),
    ("batched_chunked", {"wrw_mode": "batched", "workspace_cap": 1}),
    ("concat_chunked", {"wrw_mode": "concat", "workspace_cap": 1}),
]


def _family_cases():
    """Chunked runs for every direction in FP32, plus FP16/BF16 backward weights (the float
    accumulator); both NCHW backward-weights strategies, plain and chunked, in FP32 and FP16."""
    out = []
    for name, kw in FAMILY_SHAPES.items():
        for lay in layouts_for(kw):
            cl = lay in ("NHWC", "NDHWC")
            for d in "FBW":
                for dt in (("FP32", "FP16", "BF16") if d == "W" else ("FP32",)):
                    out.append((name, d, dt, lay, "chunked", {"workspace_cap": 1}))
                if d == "W" and not cl:
                    for dt in ("FP32", "FP16"):
                        out += [(name, d, dt, lay, v, o) for v, o in VARIANTS if "wrw_mode" in o]
    return out


FAMILY_CASES = _family_cases()


def test_gemm_variant_solutions():
    """Every variant problem has a gemm solver whose solution builds with the forced options; a one-image
    cap shrinks the forward and backward-data workspace of a multi-image batch that needs one."""
    for shape, direction, dtype, layout, variant, opts in FAMILY_CASES:
        p = ProblemDescription.make(direction, layout=layout, dtype=dtype, **FAMILY_SHAPES[shape])
        s = _pick(p)
        sol = s.get_solution(p, **opts)
        assert sol.solver_id == s.id
        if direction != "W" and p.n > 1 and s.workspace_bytes(p):
            assert sol.workspace_bytes < s.workspace_bytes(p), f"{p.key()} {variant}: the cap did not shrink it"


@pytest.mark.gpu
@pytest.mark.parametrize("shape,direction,dtype,layout,variant,opts", FAMILY_CASES,
                         ids=[f"{d}-{n}-{dt}-{lay}-{v}" for n, d, dt, lay, v, _ in FAMILY_CASES])
def test_gemm_variants(shape, direction, dtype, layout, variant, opts):
    """Chunked batches (one image per chunk, so FP16/BF16 backward weights use the float accumulator)
    and both NCHW backward-weights strategies, forced."""
    p = ProblemDescription.make(direction, layout=layout, dtype=dtype, **FAMILY_SHAPES[shape])
    s = _pick(p)
    err, tol, _, _ = _run(s, p, **opts)
    assert err <= tol, f"{s.id} {p.key()} {variant}: relative error {err:.3g} > {tol:.1g}"


def _wide_index_solution(monkeypatch, direction, layout):
    import miofind.solvers.gemm_base as gb

    monkeypatch.setattr(gb, "INT32_SAFE", 1)
    p = ProblemDescription.make(direction, layout=layout, dtype="FP16", **SHAPES["stride2"])
    s = _pick(p)
    return s, p, s.get_solution(p, workspace_cap=1)


@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gemm_wide_index_macros(monkeypatch, direction, layout):
    """Past the 32-bit limit every kernel is built with 64-bit indices."""
    _, _, sol = _wide_index_solution(monkeypatch, direction, layout)
    assert sol.kernels and all(dict(k.macros)["INDEX_T"] == "long long" for k in sol.kernels)


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gemm_wide_indices(monkeypatch, direction, layout):
    """The 64-bit index build (used for tensors near 2^31 elements) on a small problem."""
    s, p, sol = _wide_index_solution(monkeypatch, direction, layout)
    err, tol, _, _ = _run(s, p, sol=sol)
    assert err <= tol


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gemm_misaligned_workspace(direction, layout):
    """A workspace view that starts 16 bytes into an allocation (the invoker realigns it)."""
    p = ProblemDescription.make(direction, layout=layout, dtype="FP16", **SHAPES["3x3_pad1"])
    s = _pick(p)
    err, tol, _, _ = _run(s, p, ws_offset=16, workspace_cap=1)
    assert err <= tol


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FBW")
def test_gemm_transposed(direction):
    t = ProblemDescription.make(direction, n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2,
                                transposed=True, output_padding=1, groups=2)
    s = _pick(t)
    err, tol, _, _ = _run(s, t)
    assert err <= tol, (s.id, err)


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gemm_strict_fp32_is_not_tf32(direction, layout):
    """Long reductions (C*taps = 1152) make TF32 visible (~1e-3 relative); strict must stay near 1e-6."""
    kw = dict(n=2, c=128, k=32, in_size=(10, 10), filter_size=3, pads=1)
    p = ProblemDescription.make(direction, layout=layout, **kw)
    s = _pick(p)
    err, tol, _, _ = _run(s, p)
    assert err <= 1e-5, f"strict FP32 error {err:.3g}: TF32 in use?"
    pt = ProblemDescription.make(direction, layout=layout, math="tf32", **kw)
    err_t, tol_t, _, _ = _run(s, pt)
    assert err_t <= tol_t


# NHWC backward weights has a single strategy
DETERMINISM = [("NCHW", "batched"), ("NCHW", "concat"), ("NCHW", None), ("NHWC", None)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout,mode", DETERMINISM, ids=[f"{lay}-{m or 'default'}" for lay, m in DETERMINISM])
def test_gemm_wrw_deterministic(layout, mode):
    import cupy

    p = ProblemDescription.make("W", layout=layout, n=4, c=16, k=32, in_size=(20, 20), filter_size=3, pads=1)
    s = _pick(p)
    opts = {"wrw_mode": mode} if mode else {}
    _, _, o1, _ = _run(s, p, seed=3, workspace_cap=1, **opts)
    _, _, o2, _ = _run(s, p, seed=3, workspace_cap=1, **opts)
    assert bool(cupy.array_equal(o1.view(cupy.uint32), o2.view(cupy.uint32)))


def test_gemm_workspace_reported_and_chunked():
    from miofind.solvers.gemm_base import WORKSPACE_CAP
    cls = _classes()
    big = ProblemDescription.make("F", n=256, c=256, k=64, in_size=(56, 56), filter_size=3, pads=1)
    fwd = cls["F"][1]
    ws = fwd.workspace_bytes(big)
    per_image = 256 * 9 * 56 * 56 * 4
    assert per_image * 2 <= ws <= WORKSPACE_CAP + 4096 and ws % per_image < 4096
    assert fwd.get_solution(big).workspace_bytes == ws
    one = ProblemDescription.make("F", n=4, c=8, k=8, in_size=(6, 6), filter_size=1)
    assert cls["F"][0].workspace_bytes(one) == 0 and cls["B"][0].workspace_bytes(one.with_direction("B")) == 0


@pytest.mark.gpu
def test_gemm_1x1_speed_near_cublas():
    """GemmFwd1x1 (NCHW, 1x1 64->256 @56, N=32, FP32) against cupy.matmul of the same batched GEMM, the best of 5
    interleaved bursts of 20 calls each (it failed once at 247 against 147 us with 14 workers sharing the GPU)."""
    import cupy

    from miofind.invokers import build_invoker, call

    p = ProblemDescription.make("F", n=32, c=64, k=256, in_size=(56, 56), filter_size=1)
    s = _classes()["F"][0]
    inv = build_invoker(p, s.get_solution(p))
    x = cupy.random.standard_normal(p.x_shape, dtype=cupy.float32)
    w = cupy.random.standard_normal(p.w_shape, dtype=cupy.float32)
    y = cupy.empty(p.y_shape, dtype=cupy.float32)
    wm, xm = w.reshape(256, 64), x.reshape(32, 64, 56 * 56)

    def timed(fn, iters=20):
        e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
        e0.record()
        for _ in range(iters):
            fn()
        e1.record()
        e1.synchronize()
        return cupy.cuda.get_elapsed_time(e0, e1) / iters

    def ours_fn():
        call(inv, p, x, w, y, None)

    def ref_fn():
        cupy.matmul(wm, xm)

    for _ in range(3):
        ours_fn(), ref_fn()
    # the best of 5 interleaved bursts each: the suite's other workers share the GPU
    bursts = [(timed(ours_fn), timed(ref_fn)) for _ in range(5)]
    ours, ref = min(b[0] for b in bursts), min(b[1] for b in bursts)
    print(f"GemmFwd1x1 {ours * 1e3:.1f} us, cupy.matmul {ref * 1e3:.1f} us")
    np.testing.assert_allclose(cupy.asnumpy(y.reshape(32, 256, -1)), cupy.asnumpy(cupy.matmul(wm, xm)),
                               rtol=1e-4, atol=1e-4)
    assert ours <= 1.5 * ref + 0.01
