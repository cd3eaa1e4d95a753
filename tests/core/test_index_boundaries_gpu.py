"""Index arithmetic at the 32/64-bit boundary, for the naive, tiled direct, im2col-GEMM, depthwise and
implicit-GEMM builds: per build and direction, a problem whose largest tensor is just under the
point where the build switches to 64-bit indices and one just over 2^31 elements.

The switch points differ: tiled direct, depthwise and implicit GEMM switch at 2^31 - 1 elements; the
naive kernels count their grid-stride step (2^28), so they switch at 2^31 - 1 - 2^28 elements and a
tensor just under 2^31 already needs 64 bits (the case of issue 15: the int loop index wrapped);
im2col-GEMM switches at 2^31 - 2^22. Shapes are cheap: FP16, NCHW, 2 channels, 1x1 or 3x3 filters
(at most about 20 GB of GPU memory per case).

The CPU test pins, for every case, that the solver applies and which index type its kernels are
built with (``INDEX_T``), and that im2col-GEMM refuses, as designed, a problem whose GEMM dimension
passes cuBLAS's 32-bit sizes. The GPU test (markers ``gpu`` and ``big``; skipped unless selected
with ``-m big`` or MIOFIND_BIG_TESTS=1, since each case allocates up to ~20 GB) runs each case
through ``get_solver(id).get_solution`` and its invoker on random inputs into a NaN-poisoned output,
checks that no output element is left NaN (every element written), and compares against a float64
reference computed independently of the kernels under test (NumPy/CuPy sums, not the naive solver; shared with the
Hopper family's boundary test in tests/boundary_helpers.py): on 64 randomly sampled output elements plus the first 2
and last 8 for F and B, on every element for W (whose output, the weights gradient, has at most 36 elements). The
bound is ``verify.tolerance_for``'s per-element one, relative to the largest sampled reference magnitude.
``scripts/sanitize-boundaries`` runs a subset under compute-sanitizer memcheck.
"""

from __future__ import annotations

import math
import os

import boundary_helpers as bh
import numpy as np
import pytest

from miofind.problem import ProblemDescription

T31 = 2**31
H = 256


def _p(direction, n, w, filter_size, groups=1):
    return ProblemDescription.make(direction, n=n, c=2, k=2, groups=groups, in_size=(H, w), filter_size=filter_size,
                                   pads=filter_size // 2, dtype="FP16")


# (case id, solver, problem, expected INDEX_T); largest tensor = n * 2 * 256 * w elements
_NAIVE = {"F": "ConvDirectNaiveConvFwd", "B": "ConvDirectNaiveConvBwd", "W": "ConvDirectNaiveConvWrw"}
_GEMM = {"F": "GemmFwdRest", "B": "GemmBwdRest", "W": "GemmWrwUniversal"}
_DW = {"F": "ConvDepthwiseFwd", "B": "ConvDepthwiseBwd", "W": "ConvDepthwiseWrw"}
_IGEMM = {"F": "ConvImplicitGemmFwd", "B": "ConvImplicitGemmBwd", "W": "ConvImplicitGemmWrw"}
CASES = []
for d in "FBW":
    CASES += [
        # 2^31 - 2^28 - 2^17 elements: the naive build's largest 32-bit problem
        (f"naive-{d}-int", _NAIVE[d], _p(d, 14335, 256, 1), "int"),
        # 2^31 - 2^17: under 2^31, but index + grid-stride step passes 2^31 - 1
        (f"naive-{d}-under", _NAIVE[d], _p(d, 16383, 256, 1), "long long"),
        # 2^31 + 2^23
        (f"naive-{d}-over", _NAIVE[d], _p(d, 16384, 257, 1), "long long"),
        # 2^31 - 2^22 - 2^17: just under im2col-GEMM's switch
        (f"gemm-{d}-under", _GEMM[d], _p(d, 16351, 256, 3), "int"),
        (f"gemm-{d}-over", _GEMM[d], _p(d, 16384, 257, 3), "long long"),
        (f"depthwise-{d}-under", _DW[d], _p(d, 16383, 256, 3, groups=2), "int"),
        (f"depthwise-{d}-over", _DW[d], _p(d, 16384, 257, 3, groups=2), "long long"),
        (f"igemm-{d}-under", _IGEMM[d], _p(d, 16383, 256, 1), "int"),
        (f"igemm-{d}-over", _IGEMM[d], _p(d, 16384, 257, 1), "long long"),
    ]
CASES += [("tiled-F-under", "ConvDirectTiledFwd", _p("F", 16383, 256, 3), "int"),
          ("tiled-F-over", "ConvDirectTiledFwd", _p("F", 16384, 257, 3), "long long")]
IDS = [c[0] for c in CASES]


def _largest(p) -> int:
    return max(math.prod(s) for s in p.io_shapes())


def test_boundary_cases_apply_and_choose_the_index_width():
    """Every case is where its id says (under/over 2^31 elements), its solver applies, and its kernels
    are built with the expected index type; im2col-GEMM refuses a GEMM dimension past 2^31 (cuBLAS's
    32-bit sizes) by design."""
    from miofind.registry import get_solver

    for cid, sid, p, index_t in CASES:
        n = _largest(p)
        assert (n < T31) == ("-over" not in cid), (cid, n - T31)
        s = get_solver(sid)
        assert s.applicability(p), (cid, s.applicability(p).reason)
        sol = s.get_solution(p)
        assert sol.kernels and {dict(k.macros)["INDEX_T"] for k in sol.kernels} == {index_t}, cid
    one_channel = ProblemDescription.make("F", n=32768, c=1, k=1, in_size=(H, 257), filter_size=3, pads=1,
                                          dtype="FP16")
    why = get_solver("GemmFwdRest").applicability(one_channel)
    assert not why and "cuBLAS's 32-bit sizes" in why.reason


@pytest.mark.gpu
@pytest.mark.big
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_solver_at_the_index_boundary(case, big_selected):
    from miofind.registry import get_solver
    from miofind.verify import tolerance_for

    cid, sid, p, index_t = case
    s = get_solver(sid)
    sol = s.get_solution(p)
    assert {dict(k.macros)["INDEX_T"] for k in sol.kernels} == {index_t}
    seed = int.from_bytes(os.urandom(4), "little")
    a, b, out, unwritten = bh.run(p, sol, seed)
    assert unwritten == 0, f"{cid}: {unwritten} output elements not written (still NaN) or not finite"

    if p.direction == "W":
        ref = bh.ref_w(a, b, p)   # a = dy, b = x
        got = bh.to_f64(out)
        where = "every element"
    else:
        idx = bh.sample(out.shape, np.random.default_rng(seed))
        fn = bh.REFS[p.direction]
        ref = np.array([fn(a, b, p, i) for i in idx])
        got = np.array([float(out[i]) for i in idx])
        where = f"{len(idx)} sampled elements (seed {seed})"
    scale = float(np.abs(ref).max())
    err = float(np.abs(got - ref).max()) / scale
    tol = tolerance_for(p, s.family).element
    assert err <= tol, f"{cid} ({sid}, INDEX_T={index_t}): max element error {err:.3g} > {tol:.3g} over {where}"
