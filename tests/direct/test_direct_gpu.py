"""Direct family on the GPU: every solver x direction x dtype x layout it claims, on tests/shapes.py,
against the numpy float64 reference with poisoned outputs; rejected problems carry a reason."""

import pytest

from gpu_helpers import check_claim, check_solver, claim_cases
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import solvers

pytestmark = pytest.mark.gpu
DIRECT = [s for s in solvers() if s.family == "direct"]
CASES, CASE_IDS = claim_cases(DIRECT, SHAPES)


@pytest.mark.parametrize("solver,direction,shape,dtype,layout", CASES,
                         ids=CASE_IDS)
def test_direct_solver(solver, direction, shape, dtype, layout):
    check_claim(solver, direction, shape, SHAPES[shape], dtype, layout)


@pytest.mark.parametrize("cfg", [{"TILE_W": 8, "TILE_H": 4, "KPT": 4, "CCH": 2},
                                 {"TILE_W": 32, "TILE_H": 8, "KPT": 16, "CCH": 4},
                                 {"TILE_W": 16, "TILE_H": 16, "KPT": 2, "CCH": 16}])
def test_tiled_configs(cfg):
    from miofind.registry import get_solver

    s = get_solver("ConvDirectTiledFwd")
    p = ProblemDescription.make("F", **SHAPES["3x3_odd"])
    assert s.is_valid_config(p, cfg)
    err, tol = check_solver(s, p, config=cfg)
    assert err <= tol


def test_naive_transposed_all_directions():
    from miofind.registry import reference_solver

    for d in "FBW":
        t = ProblemDescription.make(d, n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2,
                                    transposed=True, output_padding=1, groups=2)
        s = reference_solver(t.as_conv().direction)
        err, tol = check_solver(s, t)
        assert err <= tol, (d, err)


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
