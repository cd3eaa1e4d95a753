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
from miofind.registry import get_solver, solvers

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


# -- configs: which of the cuBLASLt heuristic's algorithms the GEMMs run ---------------------------

LT_PROBLEMS = {
    "F-NHWC-FP16-1x1": dict(direction="F", layout="NHWC", dtype="FP16", n=8, c=64, k=128, in_size=(28, 28),
                            filter_size=1),
    "B-NHWC-BF16-1x1": dict(direction="B", layout="NHWC", dtype="BF16", n=8, c=128, k=64, in_size=(28, 28),
                            filter_size=1),
    "W-NHWC-FP16-1x1": dict(direction="W", layout="NHWC", dtype="FP16", n=8, c=64, k=128, in_size=(28, 28),
                            filter_size=1),
    "F-NCHW-FP32-3x3": dict(direction="F", layout="NCHW", dtype="FP32", n=4, c=32, k=48, in_size=(15, 13),
                            filter_size=3, pads=1),
    "W-NCHW-FP16-3x3-chunked": dict(direction="W", layout="NCHW", dtype="FP16", n=4, c=32, k=48, in_size=(15, 13),
                                    filter_size=3, pads=1),
}


def _lt_problem(name):
    kw = dict(LT_PROBLEMS[name])
    return ProblemDescription.make(kw.pop("direction"), **kw)


def test_gemm_configs_name_a_place_of_the_heuristics_list_and_the_key_names_the_library():
    """The space is the heuristic's other places (and for W the splits); a config of another place or form is
    invalid, and get_solution says so; cuBLASLt's version (which decides the list) is in the trust key."""
    from miofind import cublas
    from miofind.trust import trust_key

    from miofind.solvers import gemm_base
    from miofind.solvers.gemm_base import SPLIT_PLACES, SPLITS

    assert (gemm_base.LT_ALGOS, gemm_base.REDUCTIONS) == (cublas.LT_ALGOS, cublas.REDUCTIONS)   # mirrored, not imported

    places = [{"LT": i} for i in range(1, cublas.LT_ALGOS)]
    splits = [{"LT": i, "SK": k, "RED": r} for i in range(SPLIT_PLACES) for k in SPLITS for r in ((0,) if k == 1 else (1, 2))]
    for name in ("F-NHWC-FP16-1x1", "W-NHWC-FP16-1x1"):
        p = _lt_problem(name)
        s = _pick(p)
        assert s.tunable and s.default_config(p) == {"LT": 0}
        space = s.config_space(p)
        # backward weights also tunes the split of its long reduction; a find measures the heuristic's first only
        assert space == places + (splits if name[0] == "W" else [])
        assert s.find_configs(p) == [None] and s.configs_now is None
        assert all(s.is_valid_config(p, c) for c in [None, {}, {"LT": 0}] + space)
        for bad in ({"LT": cublas.LT_ALGOS}, {"LT": -1}, {"LT": True}, {"LT": 2.0}, {"LT": 2, "CUBLASLT": "130100"},
                    {"lt": 2}, [1], {"LT": SPLIT_PLACES, "SK": 2, "RED": 1}, {"LT": 0, "SK": 5, "RED": 1},
                    {"LT": 0, "SK": 1, "RED": 1}, {"LT": 0, "SK": 2, "RED": 0}, {"LT": 0, "SK": 2, "RED": 4},
                    {"LT": 0, "SK": 2}) + (() if name[0] == "W" else ({"LT": 0, "SK": 2, "RED": 1},)):
            assert not s.is_valid_config(p, bad), bad
            with pytest.raises(ValueError, match="is not valid"):
                s.get_solution(p, bad)
        assert s.get_solution(p, space[2]).config == space[2] and s.get_solution(p).config is None
    v = cublas.lt_version()
    for sid in ("GemmWrw1x1_stride1", "GemmFwdRest", "ConvWinograd3x3F43Fwd"):
        assert trust_key(get_solver(sid)).endswith(f";cublaslt={v if v else '?'}"), sid


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(LT_PROBLEMS))
def test_gemm_every_cublaslt_algorithm_verifies(name):
    """Each place of the heuristic's list (the default, then the space's places) runs its algorithm and verifies
    against the float64 reference, or (a place beyond the list) fails with LtAlgoMissing; at least two run. The
    chunked case runs with a one-image workspace cap."""
    from miofind.cublas import LtAlgoMissing

    p = _lt_problem(name)
    s = _pick(p)
    opts = {"workspace_cap": 1} if name.endswith("chunked") else {}
    ran, missing = [], []
    for i, cfg in enumerate([None] + [c for c in s.config_space(p) if set(c) == {"LT"}]):
        try:
            err, tol, _, sol = _run(s, p, seed=i, sol=s.get_solution(p, cfg, **opts))
        except LtAlgoMissing:
            missing.append(cfg)
            continue
        assert err <= tol, f"{s.id} {cfg} {p.key()}: relative error {err:.3g} > {tol:.1g}"
        assert sol.config == cfg
        ran.append(cfg)
    assert len(ran) >= 2, (ran, missing)
    # the missing places are the list's tail
    assert all((c or {}).get("LT", 0) > max((r or {}).get("LT", 0) for r in ran) for c in missing)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["W-NHWC-FP16-1x1", "W-NCHW-FP16-3x3-chunked"])
def test_gemm_wrw_reduction_splits_verify(name):
    """Backward weights' split configs (a heuristic algorithm with the pixels' reduction split SK ways, summed in place
    or in float) verify against the float64 reference, or fail with LtAlgoMissing where cuBLASLt refuses the split;
    most of the first algorithm's run."""
    from miofind.cublas import LtAlgoMissing
    from miofind.solvers.gemm_base import SPLITS

    p = _lt_problem(name)
    s = _pick(p)
    opts = {"workspace_cap": 1} if name.endswith("chunked") else {}
    ran, missing = [], []
    for i, cfg in enumerate({"LT": 0, "SK": k, "RED": r} for k in SPLITS for r in ((0,) if k == 1 else (1, 2))):
        try:
            err, tol, _, sol = _run(s, p, seed=100 + i, sol=s.get_solution(p, cfg, **opts))
        except LtAlgoMissing:
            missing.append(cfg)
            continue
        assert err <= tol, f"{s.id} {cfg} {p.key()}: relative error {err:.3g} > {tol:.1g}"
        ran.append(cfg)
    assert len(ran) >= len(missing) and any(c["SK"] > 1 for c in ran), (ran, missing)


@pytest.mark.gpu
def test_lt_gemm_places_are_distinct_algorithms():
    """LtGemm's ``algo`` takes that place of the heuristic's list: a 512^3 FP16 GEMM's places are distinct
    algorithms (distinct 64-byte cublasLtMatmulAlgo_t), and the first equals the plain plan's."""
    from miofind import cublas

    def plan(i):
        g = cublas.LtGemm(cublas.OP["N"], cublas.OP["N"], 512, 512, 512, cublas.R_16F, 512, 0, 512, 0, cublas.R_16F,
                          512, 0, 1, cublas.COMPUTE_32F, 0, True, algo=i)
        try:
            got = g._plan((256, 256, 256))
        except cublas.LtAlgoMissing:
            return None
        return bytes(got[0])

    algos = [plan(i) for i in range(cublas.LT_ALGOS)]
    have = [a for a in algos if a is not None]
    assert len(have) >= 2 and len(set(have)) == len(have) and algos[0] is not None
    assert algos.index(None) == len(have) if None in algos else True


@pytest.mark.gpu
def test_tuned_cublaslt_algorithm_is_stored_and_find_runs_it(tmp_db):
    """A tune of GemmWrw1x1 measures the heuristic's algorithms and stores the fastest (the default's time beside
    it); a normal-mode find then answers with that config, which runs and verifies."""
    import miofind.db.handles as handles
    from miofind import find_solutions
    from miofind.db import FindDB
    from miofind.device import current_device
    from miofind.tuning import Tuner, TuneOptions

    dev = current_device()
    p = _lt_problem("W-NHWC-FP16-1x1")
    dbs = handles.open_dbs(tmp_db, dev)
    t = Tuner(dbs, dev, TuneOptions(strategy="random", max_configs=8, seed=0, solvers=("GemmWrw1x1_stride1",)))
    out = t.tune_problem(p)
    assert out.status == "done", out
    (o,) = out.solvers
    assert o.status == "tuned" and o.tried >= 2, o
    (rec,) = FindDB(tmp_db).lookup_perf(dev.db_name, p.key(), "GemmWrw1x1_stride1")
    assert rec.config == o.config and rec.default_time_ms is not None
    found = find_solutions(p, db=tmp_db)
    assert found.source == "db"
    g = next(s for s in found if s.solver_id == "GemmWrw1x1_stride1")
    assert g.config == o.config and g.verified
    s = _pick(p)
    err, tol, _, _ = _run(s, p, seed=5, sol=s.get_solution(p, g.config))
    assert err <= tol
