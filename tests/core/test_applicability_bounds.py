"""Every solver's applicability runs in bounded time on any problem, and never calls applicable what its
solution cannot launch (issue 15: no hangs, no overflow; CPU only)."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miofind.cli import main
from miofind.driver_args import problems_from_driver_args
from miofind.problem import ProblemDescription as P
from miofind.registry import applicability_table, get_solver, solvers
from miofind.solvers.fft_base import smooth_size
from miofind.tensors import index_bound, max_linear_index

from strategies import directions, problems

BUDGET_S = 0.5  # per solver and problem: checks take about 0.1 ms, the slowest (depthwise tiles) a few ms
GRID_MAX = (2**31 - 1, 65535, 65535)


def _smooth_by_search(m: int, even: bool) -> int:
    n = max(m, 2 if even else 1)
    while True:
        r = n
        for f in (2, 3, 5, 7):
            while r % f == 0:
                r //= f
        if r == 1 and not (even and n % 2):
            return n
        n += 1


def test_smooth_size_matches_the_search_it_replaced():
    for m in range(0, 5000):
        for even in (False, True):
            assert smooth_size(m, even) == _smooth_by_search(m, even), (m, even)


@pytest.mark.parametrize("m", [10**12, 10**16, 2**63, 2**65])
def test_smooth_size_is_fast_for_any_size(m):
    t = time.perf_counter()
    L = smooth_size(m, even=True)
    assert time.perf_counter() - t < 0.5
    assert L >= m and L % 2 == 0
    r = L
    for f in (2, 3, 5, 7):
        while r % f == 0:
            r //= f
    assert r == 1


def test_smooth_size_refuses_sizes_beyond_any_problem():
    with pytest.raises(ValueError, match="beyond any FFT grid"):
        smooth_size(2**66)


@pytest.mark.parametrize("pad", ["1000000000000", "10000000000000000"])
def test_fft_check_of_a_huge_padding_is_immediate(pad):
    """`miofind solvers conv -p 10^12 -q 10^12 -F 1` ran for minutes (10^16: past 26 minutes) in
    smooth_size's linear search before the size checks."""
    t = time.perf_counter()
    r = CliRunner().invoke(main, ["solvers", "conv", "-p", pad, "-q", pad, "-F", "3"])
    assert time.perf_counter() - t < 5, "the applicability checks took too long"
    assert r.exit_code == 0, r.output
    fft = [ln for ln in r.stdout.splitlines() if "\tConvFFT" in ln]
    assert len(fft) == 4
    assert any("ConvFFTFwd\t0\tFFT grid of at least" in ln for ln in fft), fft
    assert any("ConvFFTBwd\t0\tFFT grid of at least" in ln for ln in fft), fft


def test_max_linear_index_is_exact_past_2_63():
    p = P.make(n=4294967296, c=4294967296, k=4294967296, in_size=(32, 32))
    assert max_linear_index(p) == 4294967296**2 * 32 * 32 > 2**64  # x; np.prod wrapped here


def test_naive_is_not_applicable_where_64_bit_indexing_overflows():
    """-n 4294967296 -c 4294967296 -k 4294967296 showed the naive solver applicable; its get_solution then
    raised OverflowError."""
    for p in problems_from_driver_args("conv -n 4294967296 -c 4294967296 -k 4294967296 -F 0"):
        a = get_solver({"F": "ConvDirectNaiveConvFwd", "B": "ConvDirectNaiveConvBwd",
                        "W": "ConvDirectNaiveConvWrw"}[p.direction]).applicability(p)
        assert not a and "beyond 64-bit indices" in a.reason, a
        assert not [s.id for s, a in applicability_table(p) if a]


def test_naive_takes_64_bit_indices_where_32_bit_arithmetic_would_overflow():
    """Small tensors with a stride past 2^31: the coordinate o*stride overflows an int, so the naive
    kernel (the verification reference) is built with 64-bit indices rather than refused."""
    p = P.make(n=2, c=4, k=4, in_size=(8, 8), filter_size=3, pads=1, strides=(18950544875, 1))
    s = get_solver("ConvDirectNaiveConvFwd")
    assert s.applicability(p) and index_bound(p) > 2**31
    assert ("INDEX_T", "long long") in s.get_solution(p).kernels[0].macros


def test_naive_grid_stride_step_counts_in_the_index_type():
    """The issue's large FP16 layer: 2.0e9 output elements, under 2^31, but the grid-stride loop adds
    up to 2^28 to an index near the end: 32-bit indices would wrap, so the build is 64-bit."""
    (p,) = problems_from_driver_args("convfp16 -n 120 -c 64 -H 512 -W 512 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1")
    assert max_linear_index(p) < 2**31 - 1
    macros = dict(get_solver("ConvDirectNaiveConvFwd").get_solution(p).kernels[0].macros)
    assert macros["INDEX_T"] == "long long"
    small = P.make(n=2, c=4, k=4, in_size=(8, 8), filter_size=3, pads=1)
    assert dict(get_solver("ConvDirectNaiveConvFwd").get_solution(small).kernels[0].macros)["INDEX_T"] == "int"


def test_tiled_launch_grid_must_fit():
    p = P.make(n=2, c=4, k=4, in_size=(8, 8), filter_size=3, pads=2147483647)
    a = get_solver("ConvDirectTiledFwd").applicability(p)
    assert not a and ("launch grid" in a.reason or "index" in a.reason), a.reason


def _sizes(top: int):
    return st.integers(0, top.bit_length() - 1).flatmap(lambda b: st.integers(1 << b, min(top, (2 << b) - 1)))


@st.composite
def big_problems(draw):
    """Valid problems with sizes up to 2^62 per field (most are rejected by some field check)."""
    nd = draw(st.sampled_from((2, 3)))
    top = draw(st.sampled_from((4096, 2**31, 2**62)))
    g = draw(st.sampled_from((1, 2, 32)))
    filt = [draw(_sizes(min(top, 2**20))) for _ in range(nd)]
    pads = [draw(st.one_of(st.integers(0, 2), _sizes(top))) for _ in range(nd)]
    ins = [max(1, f - 2 * q) + draw(_sizes(top)) for f, q in zip(filt, pads)]
    try:
        return P.make(draw(directions), n=draw(_sizes(top)), c=g * draw(_sizes(top)), k=g * draw(_sizes(top)),
                      in_size=ins, filter_size=filt, pads=pads, strides=draw(st.sampled_from((1, 2))), groups=g,
                      layout=draw(st.sampled_from((None, "NHWC" if nd == 2 else "NDHWC"))),
                      dtype=draw(st.sampled_from(("FP32", "FP16"))), transposed=draw(st.booleans()))
    except ValueError:
        return P.make(n=1, c=1, k=1, in_size=(1, 1), filter_size=1)


def _check_every_solver(p):
    for s in solvers():
        t = time.perf_counter()
        a = s.applicability(p)
        dt = time.perf_counter() - t
        assert dt < BUDGET_S, f"{s.id} took {dt:.3f} s to judge {p.key()}"
        if not a:
            assert a.reason, (s.id, p.key())
            continue
        if s.family == "cudnn":
            continue   # its solution is a cuDNN plan built on the GPU (with the frontend installed)
        ws = s.workspace_bytes(p)
        sol = s.get_solution(p)
        assert isinstance(ws, int) and 0 <= ws < 2**63 and 0 <= sol.workspace_bytes < 2**63, (s.id, p.key())
        for k in sol.kernels:
            assert all(1 <= g <= m for g, m in zip(k.grid, GRID_MAX)), (s.id, p.key(), k.name, k.grid)
            assert 1 <= k.block[0] * k.block[1] * k.block[2] <= 1024, (s.id, p.key(), k.name, k.block)


# warm every solver's imports and caches once, so the budget measures the checks
_check_every_solver(P.make(n=2, c=4, k=4, in_size=(8, 8)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.one_of(problems(), big_problems()))
def test_every_solver_judges_any_problem_within_budget(p):
    _check_every_solver(p)
