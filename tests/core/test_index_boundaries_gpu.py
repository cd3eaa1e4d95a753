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
reference computed independently of the kernels under test (NumPy/CuPy sums, not the naive solver):
on 64 randomly sampled output elements plus the first 2 and last 8 for F and B, on every element
for W (whose output, the weights gradient, has at most 36 elements). The bound is
``verify.tolerance_for``'s per-element one, relative to the largest sampled reference magnitude.
``scripts/sanitize-boundaries`` runs a subset under compute-sanitizer memcheck.
"""

from __future__ import annotations

import math
import os

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


# -- the float64 reference of sampled elements (NCHW, stride 1, dilation 1), independent of the kernels

def _f64(a) -> np.ndarray:
    import cupy

    return cupy.asnumpy(a).astype(np.float64)


def _ref_f(x, w, p, idx) -> float:
    n, k, oh, ow = idx
    cpg, kpg = p.c // p.groups, p.k // p.groups
    c0 = (k // kpg) * cpg
    (fh, fw), (ph, pw) = p.filter_size, p.pads
    hi, wi = p.in_size
    acc = 0.0
    for r in range(fh):
        for s in range(fw):
            ih, iw = oh - ph + r, ow - pw + s
            if 0 <= ih < hi and 0 <= iw < wi:
                acc += float(np.dot(_f64(x[n, c0:c0 + cpg, ih, iw]), _f64(w[k, :, r, s])))
    return acc


def _ref_b(dy, w, p, idx) -> float:
    n, c, ih, iw = idx
    cpg, kpg = p.c // p.groups, p.k // p.groups
    g = c // cpg
    k0 = g * kpg
    (fh, fw), (ph, pw) = p.filter_size, p.pads
    ho, wo = p.out_size
    acc = 0.0
    for r in range(fh):
        for s in range(fw):
            oh, ow = ih + ph - r, iw + pw - s
            if 0 <= oh < ho and 0 <= ow < wo:
                acc += float(np.dot(_f64(dy[n, k0:k0 + kpg, oh, ow]), _f64(w[k0:k0 + kpg, c - g * cpg, r, s])))
    return acc


def _ref_w(dy, x, p) -> np.ndarray:
    """Every element of dw, summed over the batch in chunks of about 2^27 products."""
    import cupy

    cpg, kpg = p.c // p.groups, p.k // p.groups
    (fh, fw), (ph, pw) = p.filter_size, p.pads
    (hi, wi), (ho, wo) = p.in_size, p.out_size
    out = np.zeros((p.k, cpg, fh, fw))
    step = max(1, (1 << 27) // (ho * wo))
    for k in range(p.k):
        for cl in range(cpg):
            c = (k // kpg) * cpg + cl
            for r in range(fh):
                for s in range(fw):
                    oh0, oh1 = max(0, ph - r), min(ho, hi + ph - r)
                    ow0, ow1 = max(0, pw - s), min(wo, wi + pw - s)
                    acc = 0.0
                    for n0 in range(0, p.n, step):
                        a = dy[n0:n0 + step, k, oh0:oh1, ow0:ow1].astype(cupy.float64)
                        b = x[n0:n0 + step, c, oh0 - ph + r:oh1 - ph + r, ow0 - pw + s:ow1 - pw + s].astype(cupy.float64)
                        acc += float(cupy.vdot(a, b))
                        del a, b
                    out[k, cl, r, s] = acc
    return out


def _sample(shape, rng, n_random=64):
    total = math.prod(shape)
    flat = np.unique(np.concatenate([np.arange(2), np.arange(total - 8, total),
                                     rng.integers(0, total, size=n_random)]))
    return [tuple(int(v) for v in idx) for idx in zip(*np.unravel_index(flat, shape))]


@pytest.mark.gpu
@pytest.mark.big
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_solver_at_the_index_boundary(case, big_selected):
    import cupy

    from miofind.invokers import build_invoker, call
    from miofind.registry import get_solver
    from miofind.verify import poison, random_array, tolerance_for

    cid, sid, p, index_t = case
    s = get_solver(sid)
    sol = s.get_solution(p)
    assert {dict(k.macros)["INDEX_T"] for k in sol.kernels} == {index_t}
    seed = int.from_bytes(os.urandom(4), "little")
    rng = cupy.random.default_rng(seed)
    sa, sb, so = p.io_shapes()
    a = random_array(sa, p.dtype, rng)
    b = random_array(sb, p.dtype, rng)
    out = cupy.empty(so, dtype=a.dtype)
    poison(out, p.dtype)
    ws = cupy.empty(sol.workspace_bytes, dtype=cupy.uint8) if sol.workspace_bytes else None
    call(build_invoker(p, sol), p, a, b, out, ws)
    cupy.cuda.runtime.deviceSynchronize()
    del ws
    cupy.get_default_memory_pool().free_all_blocks()
    unwritten = int(cupy.count_nonzero(~cupy.isfinite(out)))
    assert unwritten == 0, f"{cid}: {unwritten} output elements not written (still NaN) or not finite"

    if p.direction == "W":
        ref = _ref_w(a, b, p)   # a = dy, b = x
        got = _f64(out)
        where = "every element"
    else:
        idx = _sample(so, np.random.default_rng(seed))
        fn = _ref_f if p.direction == "F" else _ref_b
        ref = np.array([fn(a, b, p, i) for i in idx])
        got = np.array([float(out[i]) for i in idx])
        where = f"{len(idx)} sampled elements (seed {seed})"
    scale = float(np.abs(ref).max())
    err = float(np.abs(got - ref).max()) / scale
    tol = tolerance_for(p, s.family).element
    assert err <= tol, f"{cid} ({sid}, INDEX_T={index_t}): max element error {err:.3g} > {tol:.3g} over {where}"
