"""FFT family: what it claims over tests/shapes.py and the geometry and MAC tiles of its problems,
pinned on the CPU; on the GPU every claimed case against the numpy float64 reference with poisoned
outputs, both filter-spectrum paths (generated inside the MAC kernel for small filters, fft_wdft.cu for the
rest), non-default MAC tiles, geometry corners (pad >= filter, dilation, 1D, mixed layouts),
transposed problems, a non-default stream, and cuFFT's work area fitting in the reported workspace."""

import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from shapes import DTYPES, SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, solvers
from miofind.solvers.fft_base import geometry

FFT = [s for s in solvers() if s.family == "fft"]
GRID = claim_grid(FFT, SHAPES)
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"ConvFFTFwd": 54, "ConvFFTBwd": 54}
ACCEPTED_DIGEST = "3bad0441"
SOLVER_OF = {"F": "ConvFFTFwd", "B": "ConvFFTBwd"}


def test_registered():
    assert {s.id for s in FFT} == {"ConvFFTFwd", "ConvFFTBwd"}


def test_fft_claims_pinned():
    """Every stride-1 case with a filter larger than 1x1, in every dtype and layout."""
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_fft_solver(claim):
    check_claim(claim)


def _check(direction, tol=None, config=None, **kw):
    s = get_solver(SOLVER_OF[direction])
    p = ProblemDescription.make(direction, **kw)
    a = s.applicability(p)
    assert a, f"{s.id} should apply to {p.key()}: {a.reason}"
    err, default_tol = check_solver(s, p, config=config)
    assert err <= (tol or default_tol), f"{s.id} {p.key()}: relative error {err:.3g}"
    return err


# a 16 x 14 grid (F = 128 = FP, every FT divides it); 3x3 generates the filter spectrum in the MAC
# kernel, 5x5 (25 taps) has fft_wdft.cu write it
TILE_PROBLEMS = {"fused": dict(n=3, c=10, k=7, in_size=(15, 13), filter_size=3, pads=1),
                 "wdft": dict(n=3, c=10, k=7, in_size=(14, 12), filter_size=5, pads=2)}


MAC_TILES = [
    {"FT": 16, "TN": 1, "TI": 1, "GN": 4, "GI": 4, "JC": 2},
    {"FT": 16, "TN": 4, "TI": 8, "GN": 4, "GI": 4, "JC": 4},
    {"FT": 32, "TN": 8, "TI": 1, "GN": 1, "GI": 8, "JC": 8},
    {"FT": 64, "TN": 2, "TI": 4, "GN": 2, "GI": 2, "JC": 4},
]


@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("path", list(TILE_PROBLEMS))
def test_mac_tile_problems(direction, path):
    """The tile problems take the path they are named after, on a 128-wide grid, and every tile of
    test_mac_tiles is a valid configuration for them."""
    s = get_solver(SOLVER_OF[direction])
    p = ProblemDescription.make(direction, **TILE_PROBLEMS[path])
    assert s.applicability(p)
    assert geometry(p).fused == (path == "fused") and geometry(p).FP == 128
    for cfg in MAC_TILES:
        assert s.is_valid_config(p, cfg), cfg


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("path", list(TILE_PROBLEMS))
@pytest.mark.parametrize("cfg", MAC_TILES)
def test_mac_tiles(direction, path, cfg):
    """Tiles larger than the problem (masking in n, i and j) and every frequency-tile width."""
    _check(direction, config=cfg, **TILE_PROBLEMS[path])


# 3x3 with many images: regenerating the spectrum per image tile would cost more than reading it
UNFUSED = {"3x3_big_n": dict(n=200, c=4, k=6, in_size=(6, 7), filter_size=3, pads=1),
           "5x5_groups": dict(n=2, c=12, k=8, in_size=(11, 10), filter_size=5, pads=2, groups=4),
           "3d_3x3x3_dil": dict(n=1, c=3, k=5, in_size=(6, 5, 7), filter_size=3, pads=2, dilations=2)}


def _unfused_problem(direction, name, dtype, cl):
    kw = UNFUSED[name]
    lay = ("NDHWC" if cl else "NCDHW") if len(kw["in_size"]) == 3 else ("NHWC" if cl else "NCHW")
    return ProblemDescription.make(direction, layout=lay, dtype=dtype, **kw)


@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("name", list(UNFUSED))
def test_wdft_path_chosen(direction, name):
    """The UNFUSED problems are claimed and take the fft_wdft.cu path in every dtype and layout."""
    s = get_solver(SOLVER_OF[direction])
    for dtype in DTYPES:
        for cl in (False, True):
            p = _unfused_problem(direction, name, dtype, cl)
            assert s.applicability(p) and not geometry(p).fused, p.key()


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("name", list(UNFUSED))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cl", [False, True])
def test_wdft_path(direction, name, dtype, cl):
    p = _unfused_problem(direction, name, dtype, cl)
    s = get_solver(SOLVER_OF[direction])
    err, tol = check_solver(s, p)
    assert err <= tol, f"{s.id} {p.key()}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
def test_every_ranked_tile_small(direction):
    """The whole tuning space on one small grouped problem (NVRTC compiles each)."""
    kw = dict(n=2, c=6, k=9, in_size=(7, 9), filter_size=(3, 2), pads=(1, 0), groups=3)
    s = get_solver(SOLVER_OF[direction])
    p = ProblemDescription.make(direction, **kw)
    for cfg in list(s.config_space(p))[:16]:
        _check(direction, config=cfg, **kw)


GEOMETRY = {
    "pad_ge_filter": dict(n=2, c=3, k=4, in_size=(6, 7), filter_size=2, pads=(3, 2)),
    "pad_dil": dict(n=1, c=4, k=2, in_size=(9, 8), filter_size=3, pads=(4, 1), dilations=(2, 3)),
    "big_filter": dict(n=1, c=2, k=3, in_size=(12, 12), filter_size=11, pads=5),
    "1d": dict(n=2, c=4, k=6, in_size=(37,), filter_size=5, pads=2),
    "filter_eq_input": dict(n=2, c=3, k=3, in_size=(5, 5), filter_size=5),
    "3d_asym": dict(n=2, c=4, k=3, in_size=(4, 6, 5), filter_size=(2, 3, 1), pads=(1, 1, 0), dilations=(1, 2, 1)),
    "3d_groups": dict(n=1, c=6, k=4, in_size=(5, 5, 5), filter_size=3, pads=1, groups=2),
    "wide_1xk": dict(n=1, c=5, k=5, in_size=(3, 40), filter_size=(1, 9), pads=(0, 4)),
    "many_channels": dict(n=2, c=96, k=80, in_size=(9, 9), filter_size=3, pads=1),
}


@pytest.mark.parametrize("direction", "FB")
def test_geometry_claimed(direction):
    s = get_solver(SOLVER_OF[direction])
    for name, kw in GEOMETRY.items():
        a = s.applicability(ProblemDescription.make(direction, **kw))
        assert a, f"{name}: {a.reason}"


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("name", list(GEOMETRY))
def test_geometry(direction, name):
    _check(direction, **GEOMETRY[name])


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
@pytest.mark.parametrize("layouts", [("NCHW", "NHWC", "NHWC"), ("NHWC", "NCHW", "NCHW"), ("NHWC", "NHWC", "NCHW")])
def test_mixed_layouts(direction, layouts):
    kw = dict(n=2, c=40, k=36, in_size=(10, 11), filter_size=3, pads=1, groups=2)
    s = get_solver(SOLVER_OF[direction])
    p = ProblemDescription.make(direction, layout=layouts[0], w_layout=layouts[1], out_layout=layouts[2], **kw)
    err, tol = check_solver(s, p)
    assert err <= tol


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
def test_transposed(direction):
    """A transposed problem is served as its ordinary twin: transposed F is ordinary B, and back."""
    p = ProblemDescription.make(direction, n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, groups=2,
                                transposed=True)
    s = get_solver(SOLVER_OF[p.as_conv().direction])
    assert s.applicability(p)
    err, tol = check_solver(s, p)
    assert err <= tol


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
def test_resnet_like_and_private_work_area(direction):
    """A realistic size, and cuFFT's work areas fit in the idle workspace regions (no private buffer)."""
    from miofind.invokers import get_invoker

    kw = dict(n=4, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    err = _check(direction, **kw)
    assert err < 1e-5, err  # FP32 FFT error is ~1e-7 on this size
    s = get_solver(SOLVER_OF[direction])
    p = ProblemDescription.make(direction, **kw)
    inv, ws = get_invoker(p, s.id, s.default_config(p))
    assert ws == s.workspace_bytes(p)
    assert inv.private_work_bytes == 0, (
        f"cuFFT work areas {[pl.work_bytes for pl in inv.plans]} do not fit the workspace layout")


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
def test_non_default_stream_and_reuse(direction):
    """Runs on the caller's stream; a second call with another workspace buffer gives the same result.
    Stream rules as in CUDA: the inputs, written on the current stream, reach the non-blocking launch
    stream through an event; the output and workspace are made and filled on the launch stream."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.reference import conv_reference
    from miofind.verify import rel_error

    s = get_solver(SOLVER_OF[direction])
    p = ProblemDescription.make(direction, n=2, c=8, k=12, in_size=(20, 18), filter_size=5, pads=2)
    sa, sb, so = p.io_shapes()
    rng = cupy.random.default_rng(7)
    a = rng.uniform(-1, 1, sa, dtype=cupy.float32)
    b = rng.uniform(-1, 1, sb, dtype=cupy.float32)
    sol = Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(p), s.default_config(p), False, p)
    ref = cupy.asarray(conv_reference(p, cupy.asnumpy(a).astype("f8"), cupy.asnumpy(b).astype("f8")))
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.wait_event(cupy.cuda.get_current_stream().record())    # a and b are written before the launches
    outs = []
    for _ in range(2):
        with stream:
            out = cupy.full(so, cupy.nan, dtype=cupy.float32)
            ws = cupy.full(sol.workspace_bytes, 0xFF, dtype=cupy.uint8)  # NaN-like garbage in every buffer
        run_solution(sol, a, b, out, workspace=ws, stream=stream)
        stream.synchronize()
        outs.append(out)
    for out in outs:
        assert rel_error(out.astype(cupy.float64), ref) < 1e-5
    assert bool((outs[0] == outs[1]).all())


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["F", "B"])
def test_find_takes_the_prefetched_plans(direction, tmp_path, monkeypatch):
    """A find's miss makes the FFT candidate's cuFFT plans in a thread (MIOFIND_FFT_PREFETCH, fft_cufft.prefetch_plans)
    and its preparation takes them from the pool: the pool holds none of them afterwards, no plan was made twice, and
    the solution verifies against the float64 reference; with MIOFIND_FFT_PREFETCH=0 the find starts no thread."""
    import miofind
    from miofind import tiered
    from miofind.solvers import fft_cufft
    from miofind.solvers.fft_base import plan_specs
    # an earlier test's background specialisation in this process may still make plans of its own problems (the
    # GPU suite's run of session nov30e, call 5, counted two 3-D plans here): wait for them, and count this problem's
    tiered.wait()
    made = []
    real = fft_cufft.InPlacePlan

    class Counted(real):
        def __init__(self, *a):
            made.append(tuple(a))
            super().__init__(*a)

    monkeypatch.setattr(fft_cufft, "InPlacePlan", Counted)
    for i, switch in enumerate(("1", "0")):
        monkeypatch.setenv("MIOFIND_FFT_PREFETCH", switch)
        made.clear()
        # a grid no other test makes (15 x 19 + 1x7 taps), fresh per pass: a miss, with plans of a new size
        p = ProblemDescription.make(direction, n=3, c=24 + i, k=20, in_size=(15, 19), filter_size=(1, 7), pads=(0, 3))
        res = miofind.find_solutions(p, solvers=[SOLVER_OF[direction]], db=str(tmp_path / "u.sqlite"),
                                     store=False, defer=False)
        sol = {s.solver_id: s for s in res}[SOLVER_OF[direction]]
        assert sol.verified and sol.max_error is not None
        started = res.timing["solver_prefetch"]
        assert started == ([SOLVER_OF[direction]] if switch == "1" else []), started
        keys = sorted(fft_cufft._plan_key(0, *s) for s in plan_specs(p))
        mine = sorted(k for k in (fft_cufft._plan_key(0, *a) for a in made) if k in keys)
        assert mine == keys, made   # each made once: thread or preparation
        assert not set(keys) & set(fft_cufft._pool) and not set(keys) & set(fft_cufft._making)
