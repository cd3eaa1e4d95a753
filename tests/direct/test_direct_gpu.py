"""Direct family (naive references and the tiled forward solver): what it claims over tests/shapes.py
(pinned, on the CPU), and on the GPU every claimed solver x direction x dtype x layout against the
numpy float64 reference with poisoned outputs. The depthwise solvers have tests/depthwise/."""

import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import solvers

DIRECT = [s for s in solvers() if s.family == "direct"]
GRID = claim_grid(DIRECT, SHAPES)
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"ConvDirectNaiveConvFwd": 78, "ConvDirectNaiveConvBwd": 78, "ConvDirectNaiveConvWrw": 78,
            "ConvDirectTiledFwd": 33}
ACCEPTED_DIGEST = "e4540a60"


def test_direct_claims_pinned():
    """The naive solvers take every case; the tiled one 2D NCHW only."""
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_direct_solver(claim):
    check_claim(claim)


def test_reference_builds_take_their_own_kernels():
    """The float64 reference (reference=True) runs its own kernels: for F (channels-last with wide groups a warp per
    output), B, and W (channels-last x: a block per 32 dw elements; channels-first a block per element, its threads
    walking the pixels by carries); the naive solvers' own builds keep direct_naive.cu."""
    from miofind.registry import reference_solver

    expect = {("F", "NCHW"): "reference_conv_fwd", ("F", "NHWC"): "reference_conv_fwd",
              ("B", "NCHW"): "reference_conv_bwd", ("B", "NHWC"): "reference_conv_bwd",
              ("W", "NCHW"): "reference_conv_wrw_cf", ("W", "NHWC"): "reference_conv_wrw",
              ("W", "NDHWC"): "reference_conv_wrw", ("W", "NCDHW"): "reference_conv_wrw_cf"}
    for (d, lay), name in expect.items():
        size = (5, 6, 7) if "D" in lay else (7, 6)
        p = ProblemDescription.make(d, n=2, c=6, k=4, in_size=size, filter_size=3, pads=1, layout=lay, groups=2)
        s = reference_solver(d)
        (ref,) = s.get_solution(p, reference=True).kernels
        (own,) = s.get_solution(p).kernels
        assert (ref.name, own.name) == (name, f"naive_conv_{dict(F='fwd', B='bwd', W='wrw')[d]}"), (d, lay)
        assert ("DATA_T", "double") in ref.macros and ("ACC_T", "double") in ref.macros
        if d == "W":
            total = 4 * 3 * 3 ** len(size)
            assert ref.grid[0] == (-(-total // 32) if name == "reference_conv_wrw" else total), (lay, ref.grid)
    s = reference_solver("F")
    # a warp per output channels-last where a group has at least 32 channels and an output 256 products
    for lay, cpg, f, name in (("NHWC", 32, 3, "reference_conv_fwd_warp"), ("NDHWC", 40, 3, "reference_conv_fwd_warp"),
                              ("NHWC", 16, 3, "reference_conv_fwd"), ("NCHW", 64, 3, "reference_conv_fwd"),
                              ("NHWC", 128, 1, "reference_conv_fwd"), ("NHWC", 256, 1, "reference_conv_fwd_warp")):
        size = (5, 6, 7) if "D" in lay else (7, 6)
        p = ProblemDescription.make("F", n=2, c=2 * cpg, k=4, in_size=size, filter_size=f, pads=f // 2, layout=lay,
                                    groups=2)
        (ref,) = s.get_solution(p, reference=True).kernels
        assert ref.name == name, (lay, cpg, ref.name)
        outputs = 2 * 4 * (5 * 6 * 7 if "D" in lay else 7 * 6)
        assert ref.grid[0] == -(-outputs * (32 if name.endswith("warp") else 1) // 256), (lay, ref.grid)


TILED_CFGS = [{"TILE_W": 8, "TILE_H": 4, "KPT": 4, "CCH": 2}, {"TILE_W": 32, "TILE_H": 8, "KPT": 16, "CCH": 4},
              {"TILE_W": 16, "TILE_H": 16, "KPT": 2, "CCH": 16}]


def test_tiled_configs_valid():
    from miofind.registry import get_solver

    p = ProblemDescription.make("F", **SHAPES["3x3_odd"])
    for cfg in TILED_CFGS:
        assert get_solver("ConvDirectTiledFwd").is_valid_config(p, cfg), cfg


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", TILED_CFGS)
def test_tiled_configs(cfg):
    from miofind.registry import get_solver

    s = get_solver("ConvDirectTiledFwd")
    p = ProblemDescription.make("F", **SHAPES["3x3_odd"])
    err, tol = check_solver(s, p, config=cfg)
    assert err <= tol


@pytest.mark.gpu
def test_naive_transposed_all_directions():
    from miofind.registry import reference_solver

    for d in "FBW":
        t = ProblemDescription.make(d, n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2,
                                    transposed=True, output_padding=1, groups=2)
        s = reference_solver(t.as_conv().direction)
        err, tol = check_solver(s, t)
        assert err <= tol, (d, err)


@pytest.mark.gpu
@pytest.mark.parametrize("key", ["16-15-16-3x3-8-8-8-2-0x0-2x2-1x1-0-NCHW-FP32-F",      # 'same' at stride 2
                                 "16-15-16-3x3-8-8-8-2-0x0-2x2-1x1-0-NCHW-FP32-B",
                                 "16-15-16-3x3-8-8-8-2-0x0-2x2-1x1-0-NCHW-FP32-W"])
def test_stated_output_size(key):
    """MIOpen keys whose output size is ceil(in/stride) (same padding) run on the direct solvers."""
    p = ProblemDescription.from_key(key)
    assert p.out_size_override is not None
    for s in DIRECT:
        if s.applicability(p):
            err, tol = check_solver(s, p)
            assert err <= tol, (s.id, err)
