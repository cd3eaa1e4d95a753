"""The depthwise family's generic builds (miofind.generic: depthwise and small-group direct kernels
with image sizes, groups, batch and chunk count read at run time; stencil and tile shape stay
compile-time) against the float64 reference over tests/shapes.py, two shapes sharing one build under
one config, and one 64-bit-index problem (marker ``big``)."""

import pytest

from generic_gpu import (big_selected, check_generic, check_wide_generic, wide_problem,
                         check_two_shapes_share_a_build, generic_cases, shared_build)
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, solvers

FAMILY = [s for s in solvers() if s.family == "depthwise"]
CASES = generic_cases(FAMILY)

# Under the first problem's default config, a second one of other batch, channels (groups) and image
# size, whose NCHW staging vectors (from the source widths: x, or dy in backward data) are the same in
# FP32 and FP16. Stride 2 covers the strided passes (backward data's gather with S phases).
SHAPE_PAIRS = {
    "s1": (dict(n=2, c=16, k=16, groups=16, in_size=(12, 12), filter_size=3, pads=1),
           dict(n=5, c=24, k=24, groups=24, in_size=(17, 20), filter_size=3, pads=1)),
    "s2": (dict(n=2, c=16, k=32, groups=16, in_size=(24, 24), filter_size=3, pads=1, strides=2),
           dict(n=3, c=32, k=64, groups=32, in_size=(29, 40), filter_size=3, pads=1, strides=2)),
}
SHARED = [pytest.param(sid, d, lay, dt, pair, id=f"{sid}-{lay}-{dt}-{pair}")
          for sid, d in (("ConvDepthwiseFwd", "F"), ("ConvDepthwiseBwd", "B"), ("ConvDepthwiseWrw", "W"))
          for lay in ("NCHW", "NHWC") for dt in ("FP32", "FP16") for pair in SHAPE_PAIRS]


def _pair(sid, d, lay, dt, pair):
    s = get_solver(sid)
    a, b = SHAPE_PAIRS[pair]
    p1 = ProblemDescription.make(d, layout=lay, dtype=dt, **a)
    p2 = ProblemDescription.make(d, layout=lay, dtype=dt, **b)
    return s, p1, p2, s.default_config(p1)


def test_cases_cover_every_direction_layout_type_and_kind():
    seen = {(c.values[1].direction, c.values[1].layouts[0], c.values[1].dtype) for c in CASES}
    for d in "FBW":
        for lay in ("NCHW", "NHWC"):
            for dt in ("FP32", "FP16", "BF16"):
                assert (d, lay, dt) in seen, (d, lay, dt)
    ids = {c.values[0].id for c in CASES}
    assert {"ConvDepthwiseFwd", "ConvDepthwiseBwd", "ConvDepthwiseWrw",
            "ConvGroupedDirectFwd", "ConvGroupedDirectBwd", "ConvGroupedDirectWrw"} <= ids
    assert any(c.values[1].strides != (1, 1) and c.values[1].direction == "B" for c in CASES)


@pytest.mark.parametrize("sid,d,lay,dt,pair", SHARED)
def test_shared_build_cases_share_one_build(sid, d, lay, dt, pair):
    """CPU precondition of test_two_shapes_one_build: both problems apply, the first's default config
    is valid for the second, and both run one build under it."""
    s, p1, p2, cfg = _pair(sid, d, lay, dt, pair)
    assert s.applicability(p1) and s.applicability(p2)
    assert s.is_valid_config(p2, cfg), cfg
    assert shared_build(s, p1, p2, cfg)


@pytest.mark.gpu
@pytest.mark.parametrize("solver,problem", CASES)
def test_generic_build_verifies(solver, problem):
    check_generic(solver, problem)


@pytest.mark.gpu
@pytest.mark.parametrize("sid,d,lay,dt,pair", SHARED)
def test_two_shapes_one_build(sid, d, lay, dt, pair):
    s, p1, p2, cfg = _pair(sid, d, lay, dt, pair)
    check_two_shapes_share_a_build(s, p1, p2, cfg)


@pytest.mark.gpu
@pytest.mark.big
@pytest.mark.parametrize("d", ["F", "W"])
def test_generic_64bit_index(request, d):
    big_selected(request)
    # the 64-bit-index generic builds
    check_wide_generic(get_solver("ConvDepthwiseFwd" if d == "F" else "ConvDepthwiseWrw"), wide_problem(d, groups=2))
