"""Implicit GEMM's generic builds (miofind.generic: forward and backward weights; backward data per
spatial geometry) against the float64 reference over tests/shapes.py, two shapes sharing one build,
and one 64-bit-index problem (marker ``big``)."""

import pytest

from generic_gpu import (big_selected, check_generic, check_wide_generic, wide_problem,
                         check_two_shapes_share_a_build, generic_cases)
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, solvers

FAMILY = [s for s in solvers() if s.family == "implicit_gemm"]
CASES = generic_cases(FAMILY)


def test_cases_cover_every_direction():
    dirs = {c.values[1].direction for c in CASES}
    assert dirs == {"F", "B", "W"} and len(CASES) > 150


@pytest.mark.gpu
@pytest.mark.parametrize("solver,problem", CASES)
def test_generic_build_verifies(solver, problem):
    check_generic(solver, problem)


@pytest.mark.gpu
@pytest.mark.parametrize("d,sid", [("F", "ConvImplicitGemmFwd"), ("W", "ConvImplicitGemmWrw")])
def test_two_shapes_one_build(d, sid):
    s = get_solver(sid)
    cfg_keys = dict(n=2, c=16, k=16, filter_size=3, pads=1, layout="NHWC")
    p1 = ProblemDescription.make(d, in_size=(13, 11), **cfg_keys)
    p2 = ProblemDescription.make(d, in_size=(9, 17), **cfg_keys)
    check_two_shapes_share_a_build(s, p1, p2)


@pytest.mark.gpu
def test_backward_data_two_batches_one_build():
    s = get_solver("ConvImplicitGemmBwd")
    p1 = ProblemDescription.make("B", n=2, c=16, k=16, in_size=(13, 11), filter_size=3, pads=1, layout="NHWC")
    p2 = ProblemDescription.make("B", n=5, c=16, k=16, in_size=(13, 11), filter_size=3, pads=1, layout="NHWC")
    check_two_shapes_share_a_build(s, p1, p2)


@pytest.mark.gpu
@pytest.mark.big
def test_generic_64bit_index(request):
    big_selected(request)
    # the 64-bit-index generic build
    check_wide_generic(get_solver("ConvImplicitGemmFwd"), wide_problem(), builds=1)
