"""Depthwise family (depthwise and small-group direct solvers): what it claims over tests/shapes.py and
a set of family shapes (strides, pads, filters up to 7x7, multipliers, dilation, asymmetric filters,
odd widths), pinned on the CPU with the rejection reasons and the configuration spaces; on the GPU
every claimed case against the float64 reference with poisoned outputs, several tile configurations,
bitwise determinism of backward weights, the benchmark shape at realistic tiles, transposed problems."""

import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import solvers

IDS = ("ConvDepthwiseFwd", "ConvDepthwiseBwd", "ConvDepthwiseWrw",
       "ConvGroupedDirectFwd", "ConvGroupedDirectBwd", "ConvGroupedDirectWrw")
OURS = [s for s in solvers() if s.family == "depthwise"]

FAMILY_SHAPES = {
    "dw_s2_p1": dict(n=2, c=8, k=8, in_size=(13, 14), filter_size=3, pads=1, strides=2, groups=8),
    "dw_s2_p0": dict(n=1, c=4, k=4, in_size=(11, 10), filter_size=3, pads=0, strides=2, groups=4),
    "dw_5x5_s2": dict(n=1, c=8, k=8, in_size=(17, 15), filter_size=5, pads=2, strides=2, groups=8),
    "dw_5x5_s2_p1": dict(n=1, c=8, k=8, in_size=(12, 13), filter_size=5, pads=1, strides=2, groups=8),
    "dw_7x7": dict(n=2, c=4, k=4, in_size=(9, 11), filter_size=7, pads=3, groups=4),
    "dw_7x7_s2": dict(n=1, c=16, k=16, in_size=(23, 21), filter_size=7, pads=3, strides=2, groups=16),
    "dw_m2": dict(n=2, c=4, k=8, in_size=(9, 10), filter_size=3, pads=1, groups=4),
    "dw_m3_s2": dict(n=1, c=3, k=9, in_size=(10, 9), filter_size=3, pads=1, strides=2, groups=3),
    "dw_dil2": dict(n=1, c=8, k=8, in_size=(12, 13), filter_size=3, pads=2, dilations=2, groups=8),
    "dw_asym": dict(n=1, c=8, k=8, in_size=(9, 16), filter_size=(1, 5), pads=(0, 2), strides=(1, 2), groups=8),
    "dw_bigpad": dict(n=1, c=4, k=4, in_size=(6, 7), filter_size=3, pads=3, groups=4),
    "dw_wide": dict(n=1, c=4, k=4, in_size=(5, 70), filter_size=3, pads=1, groups=4),
    "dw_c24_odd": dict(n=3, c=24, k=24, in_size=(15, 17), filter_size=3, pads=1, groups=24),
    "dw_1x1": dict(n=2, c=8, k=8, in_size=(7, 9), filter_size=1, groups=8),
    "g4_s2": dict(n=2, c=12, k=8, in_size=(11, 10), filter_size=3, pads=1, strides=2, groups=4),
    "g8x8": dict(n=1, c=16, k=16, in_size=(9, 9), filter_size=3, pads=1, groups=2),
    "g_5x5_d2": dict(n=1, c=6, k=9, in_size=(13, 12), filter_size=5, pads=3, dilations=2, groups=3),
    "g_7x7_s2": dict(n=2, c=6, k=6, in_size=(16, 15), filter_size=7, pads=3, strides=2, groups=2),
}
ALL_SHAPES = {**SHAPES, **FAMILY_SHAPES}

GRID = claim_grid(OURS, ALL_SHAPES)
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"ConvDepthwiseFwd": 90, "ConvDepthwiseBwd": 90, "ConvDepthwiseWrw": 90,
            "ConvGroupedDirectFwd": 66, "ConvGroupedDirectBwd": 66, "ConvGroupedDirectWrw": 66}
ACCEPTED_DIGEST = "fc2342aa"


def test_registered():
    assert {s.id for s in OURS} == set(IDS), f"family 'depthwise' is {sorted(s.id for s in OURS)}, expected {IDS}"


def test_depthwise_claims_pinned():
    """ConvDepthwise takes 2D G = C problems; ConvGroupedDirect 2D groups of at most 8 channels that are
    not depthwise."""
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_depthwise_solver(claim):
    check_claim(claim)


def _solver(sid):
    return next(s for s in OURS if s.id == sid)


CFG_SHAPES = {"ConvDepthwise": ("dw_c24_odd", "dw_5x5_s2", "dw_m2"), "ConvGroupedDirect": ("groups2", "g4_s2", "g8x8")}
CFG_CASES = [(pre + suf, d, shape, lay) for pre, shapes in CFG_SHAPES.items()
             for suf, d in (("Fwd", "F"), ("Bwd", "B"), ("Wrw", "W")) for shape in shapes for lay in ("NCHW", "NHWC")]


def _config_picks(s, p):
    """A spread of the configuration space: the first three, a third, the middle and the last."""
    space = list(s.config_space(p))
    picks = {0, 1, 2, len(space) // 3, len(space) // 2, len(space) - 1}
    return space, [space[i] for i in sorted(i for i in picks if i < len(space))]


@pytest.mark.parametrize("sid,direction,shape,layout", CFG_CASES, ids=["-".join(c) for c in CFG_CASES])
def test_config_space(sid, direction, shape, layout):
    """The problems of test_configs are claimed; their spaces start at the default configuration and
    every pick is valid with the workspace the solver reports."""
    s = _solver(sid)
    for dt in ("FP32", "FP16"):
        p = ProblemDescription.make(direction, layout=layout, dtype=dt, **ALL_SHAPES[shape])
        a = s.applicability(p)
        assert a, f"{sid} rejected {p.key()}: {a.reason}"
        space, picks = _config_picks(s, p)
        assert space and s.default_config(p) == space[0]
        for cfg in picks:
            assert s.is_valid_config(p, cfg)
            assert s.get_solution(p, cfg).workspace_bytes == s.workspace_bytes(p)


@pytest.mark.gpu
@pytest.mark.parametrize("sid,direction,shape,layout", CFG_CASES, ids=["-".join(c) for c in CFG_CASES])
def test_configs(sid, direction, shape, layout):
    """A spread of the configuration space (different tiles, vector widths, channel splits)."""
    s = _solver(sid)
    for dt in ("FP32", "FP16"):
        p = ProblemDescription.make(direction, layout=layout, dtype=dt, **ALL_SHAPES[shape])
        for cfg in _config_picks(s, p)[1]:
            err, tol = check_solver(s, p, config=cfg)
            assert err <= tol, f"{sid} {p.key()} config {cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["FP32", "FP16", "BF16"])
def test_wrw_bitwise_deterministic(layout, dtype):
    """Backward weights uses no atomics: two runs give identical bits."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.verify import random_array

    s = _solver("ConvDepthwiseWrw")
    p = ProblemDescription.make("W", n=8, c=32, k=32, in_size=(28, 28), filter_size=3, pads=1, groups=32,
                                layout=layout, dtype=dtype)
    rng = cupy.random.default_rng(7)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, dtype, rng), random_array(sb, dtype, rng)
    sol = Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(p), s.default_config(p), False, p)
    outs = []
    for _ in range(3):
        out = cupy.empty(so, dtype=a.dtype)
        run_solution(sol, a, b, out)
        outs.append(cupy.asnumpy(out).view(f"u{out.dtype.itemsize}"))
    assert all((o == outs[0]).all() for o in outs[1:])


BENCH = dict(c=256, k=256, in_size=(56, 56), filter_size=3, pads=1, groups=256)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_benchmark_shape(direction, dtype, layout):
    """The benchmark problem's tiles (its N=32 default configuration) on N=2."""
    s = _solver({"F": "ConvDepthwiseFwd", "B": "ConvDepthwiseBwd", "W": "ConvDepthwiseWrw"}[direction])
    big = ProblemDescription.make(direction, n=32, layout=layout, dtype=dtype, **BENCH)
    p = ProblemDescription.make(direction, n=2, layout=layout, dtype=dtype, **BENCH)
    cfg = s.default_config(big)
    if not s.is_valid_config(p, cfg):
        cfg = None
    err, tol = check_solver(s, p, config=cfg)
    assert err <= tol, f"{s.id} {p.key()} config {cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_transposed(direction):
    """A transposed depthwise problem is served as the ordinary one (F <-> B)."""
    t = ProblemDescription.make(direction, n=2, c=8, k=8, in_size=(7, 6), filter_size=3, pads=1, strides=2,
                                transposed=True, output_padding=1, groups=8)
    conv_dir = t.as_conv().direction
    s = _solver({"F": "ConvDepthwiseFwd", "B": "ConvDepthwiseBwd", "W": "ConvDepthwiseWrw"}[conv_dir])
    assert s.applicability(t)
    err, tol = check_solver(s, t)
    assert err <= tol, (direction, err)


def test_rejections_have_reasons():
    dw, gr = _solver("ConvDepthwiseFwd"), _solver("ConvGroupedDirectFwd")
    cases = [
        (dw, dict(n=1, c=8, k=8, in_size=(9, 9), filter_size=3, pads=1, groups=2)),        # not depthwise
        (dw, dict(n=1, c=8, k=8, in_size=(19, 19), filter_size=9, pads=4, groups=8)),      # 9x9
        (dw, dict(n=1, c=8, k=8, in_size=(19, 19), filter_size=3, strides=3, groups=8)),   # stride 3
        (dw, dict(n=1, c=4, k=4, in_size=(5, 7, 6), filter_size=3, pads=1, groups=4)),     # 3D
        (gr, dict(n=1, c=32, k=32, in_size=(9, 9), filter_size=3, pads=1, groups=2)),      # C/G = 16
        (gr, dict(n=1, c=8, k=8, in_size=(9, 9), filter_size=3, pads=1, groups=8)),        # depthwise
    ]
    for s, kw in cases:
        a = s.applicability(ProblemDescription.make("F", **kw))
        assert not a and a.reason, (s.id, kw)
