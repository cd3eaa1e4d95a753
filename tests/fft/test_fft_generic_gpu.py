"""The fft family's generic builds (miofind.generic) against the float64 reference over tests/shapes.py."""

import pytest

from generic_gpu import check_generic, generic_cases
from miofind.registry import solvers

FAMILY = [s for s in solvers() if s.family == "fft"]
CASES = generic_cases(FAMILY)


def test_some_cases_have_generic_builds():
    assert CASES


@pytest.mark.gpu
@pytest.mark.parametrize("solver,problem", CASES)
def test_generic_build_verifies(solver, problem):
    check_generic(solver, problem)
