"""The im2col-GEMM family's generic builds (miofind.generic: im2col, col2im and the layout helpers with
the sizes read at run time; the GEMMs are cuBLAS's either way) against the float64 reference over
tests/shapes.py, two 2D shapes sharing one build per direction, layout and type, and one
64-bit-index problem (marker ``big``)."""

import pytest

from generic_gpu import (big_selected, check_generic, check_wide_generic, wide_problem,
                         check_two_shapes_share_a_build, generic_cases, shared_build)
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, solvers

FAMILY = [s for s in solvers() if s.family == "gemm"]
CASES = generic_cases(FAMILY)

# two 2D problems with odd pixel counts (the same NCHW vector width, VEC = 1) and odd channels per
# group (the same NHWC one): other batch, channels, image, filter, pads, strides and dilations
SHAPE_A = dict(n=2, c=5, k=7, in_size=(13, 11), filter_size=3, pads=1)
SHAPE_B = dict(n=3, c=7, k=4, in_size=(17, 15), filter_size=(5, 3), pads=(2, 1), strides=(2, 1), dilations=(1, 2))
SHARED = [pytest.param(sid, d, lay, dt, id=f"{sid}-{lay}-{dt}")
          for sid, d in (("GemmFwdRest", "F"), ("GemmBwdRest", "B"), ("GemmWrwUniversal", "W"))
          for lay in ("NCHW", "NHWC") for dt in ("FP32", "FP16")]


def test_cases_cover_every_direction_layout_and_type():
    seen = {(c.values[1].direction, c.values[1].layouts[0], c.values[1].dtype) for c in CASES}
    for d in "FBW":
        for lay in ("NCHW", "NHWC", "NCDHW", "NDHWC"):
            for dt in ("FP32", "FP16", "BF16"):
                assert (d, lay, dt) in seen, (d, lay, dt)
    ids = {c.values[0].id for c in CASES}
    assert {"GemmFwdRest", "GemmBwdRest", "GemmWrwUniversal", "GemmWrw1x1_stride1"} <= ids
    assert not ids & {"GemmFwd1x1_0_1", "GemmBwd1x1_stride1"}      # cuBLAS alone: nothing to compile


@pytest.mark.parametrize("sid,d,lay,dt", SHARED)
def test_shared_build_cases_share_one_build(sid, d, lay, dt):
    """CPU precondition of test_two_shapes_one_build: both problems apply and run one build."""
    s = get_solver(sid)
    p1 = ProblemDescription.make(d, layout=lay, dtype=dt, **SHAPE_A)
    p2 = ProblemDescription.make(d, layout=lay, dtype=dt, **SHAPE_B)
    assert s.applicability(p1) and s.applicability(p2)
    assert shared_build(s, p1, p2)


@pytest.mark.gpu
@pytest.mark.parametrize("solver,problem", CASES)
def test_generic_build_verifies(solver, problem):
    check_generic(solver, problem)


@pytest.mark.gpu
@pytest.mark.parametrize("sid,d,lay,dt", SHARED)
def test_two_shapes_one_build(sid, d, lay, dt):
    s = get_solver(sid)
    p1 = ProblemDescription.make(d, layout=lay, dtype=dt, **SHAPE_A)
    p2 = ProblemDescription.make(d, layout=lay, dtype=dt, **SHAPE_B)
    check_two_shapes_share_a_build(s, p1, p2)


@pytest.mark.gpu
@pytest.mark.big
def test_generic_64bit_index(request):
    big_selected(request)
    # the 64-bit-index generic build of im2col
    check_wide_generic(get_solver("GemmFwdRest"), wide_problem(), builds=1)
