"""Index arithmetic at the 32/64-bit boundary for the Hopper implicit-GEMM family (F, the copy-engine-store F, B and
W): FP16 NHWC 3x3 problems of 64 -> 64 channels at 256 x 256 whose activations hold n x 2^22 elements, just under
2^31 (n = 511, 32-bit offsets) and just over it (n = 513, 64-bit offsets: at n = 512 the last element's index, 2^31 - 1,
would still fit 32 bits), each at the solver's default config (the
copy engine) and at the same tile with 16-byte cp.async loads (the offsets computed in the kernel).

The CPU test pins that each case applies and the index type its kernels are built with (``INDEX_T``). The GPU test
(markers ``gpu`` and ``big``: up to about 42 GB of GPU memory a case, with CuPy's float64 draws; skipped unless selected with ``-m big`` or
MIOFIND_BIG_TESTS=1) runs each on random inputs into a NaN-poisoned output, checks that every output element was
written, and compares against a float64 reference computed apart from the kernels (NumPy dot products for F and B,
CuPy float64 sums for W) at 64 random output elements plus the first 2 and the last 8; the bound is
``verify.tolerance_for``'s per-element one, relative to the largest sampled reference magnitude.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from miofind.problem import ProblemDescription
from miofind.registry import get_solver

SOLVERS = {"F": "ConvImplicitGemmHopperFwd", "Fs": "ConvImplicitGemmHopperFwdTmaStore",
           "B": "ConvImplicitGemmHopperBwd", "W": "ConvImplicitGemmHopperWrw"}
INDEX = {511: "int", 513: "long long"}      # largest tensor n x 256 x 256 x 64 = n x 2^22 elements


def _p(direction: str, n: int) -> ProblemDescription:
    return ProblemDescription.make(direction, n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1,
                                   layout="NHWC", dtype="FP16")


def _config(solver, p, loads: str) -> dict:
    """The default config, or (``cp.async``) the same with the copy engine off where that is valid, else the first
    such config of the space."""
    d = solver.default_config(p)
    if loads == "tma":
        return d
    for c in (dict(d, TMA=0), dict(d, TMA=0, PERSIST=0)):
        if solver.is_valid_config(p, c):
            return c
    return next(c for c in solver.config_space(p) if not c.get("TMA", 1))


CASES = [(f"{key}-n{n}-{loads}", key, n, loads) for key in SOLVERS for n in INDEX
         for loads in (("tma",) if key == "Fs" else ("tma", "cp.async"))]


def _index_types(solver, p, cfg) -> set:
    return {dict(k.macros)["INDEX_T"] for k in solver.get_solution(p, cfg).kernels if "INDEX_T" in dict(k.macros)}


def test_cases_apply_and_choose_the_index_width(no_gpu_arch):
    for _, key, n, loads in CASES:
        s = get_solver(SOLVERS[key])
        p = _p(key[0], n)
        assert s.applicability(p), (key, n)
        cfg = _config(s, p, loads)
        assert s.is_valid_config(p, cfg) and bool(cfg.get("TMA", 1)) == (loads == "tma"), (key, loads, cfg)
        assert max(math.prod(sh) for sh in p.io_shapes()) == n << 22
        assert _index_types(s, p, cfg) == {INDEX[n]}, (key, n, loads)


def _f64(a) -> np.ndarray:
    import cupy

    return cupy.asnumpy(a).astype(np.float64)


def _ref_f(x, w, idx) -> float:
    # y[n, oh, ow, k] = sum over the taps inside x of x[n, oh - 1 + r, ow - 1 + s, :] . w[k, r, s, :]
    n, oh, ow, k = idx
    acc = 0.0
    for r in range(3):
        for s in range(3):
            ih, iw = oh - 1 + r, ow - 1 + s
            if 0 <= ih < x.shape[1] and 0 <= iw < x.shape[2]:
                acc += float(np.dot(_f64(x[n, ih, iw, :]), _f64(w[k, r, s, :])))
    return acc


def _ref_b(dy, w, idx) -> float:
    # dx[n, ih, iw, c] = sum over the taps inside dy of dy[n, ih + 1 - r, iw + 1 - s, :] . w[:, r, s, c]
    n, ih, iw, c = idx
    acc = 0.0
    for r in range(3):
        for s in range(3):
            oh, ow = ih + 1 - r, iw + 1 - s
            if 0 <= oh < dy.shape[1] and 0 <= ow < dy.shape[2]:
                acc += float(np.dot(_f64(dy[n, oh, ow, :]), _f64(w[:, r, s, c])))
    return acc


def _ref_w(dy, x, idx) -> float:
    # dw[k, r, s, c] = sum over n and the output pixels whose tap lies inside x of dy[n, oh, ow, k] x[n, oh-1+r, ow-1+s, c]
    import cupy

    k, r, s, c = idx
    ho, wo = dy.shape[1], dy.shape[2]
    oh0, oh1, ow0, ow1 = max(0, 1 - r), min(ho, x.shape[1] + 1 - r), max(0, 1 - s), min(wo, x.shape[2] + 1 - s)
    acc = 0.0
    step = 64
    for n0 in range(0, dy.shape[0], step):
        a = dy[n0:n0 + step, oh0:oh1, ow0:ow1, k].astype(cupy.float64)
        b = x[n0:n0 + step, oh0 - 1 + r:oh1 - 1 + r, ow0 - 1 + s:ow1 - 1 + s, c].astype(cupy.float64)
        acc += float(cupy.vdot(a, b))
    return acc


def _sample(shape, rng, n_random=64):
    total = math.prod(shape)
    flat = np.unique(np.concatenate([np.arange(2), np.arange(total - 8, total), rng.integers(0, total, size=n_random)]))
    return [tuple(int(v) for v in idx) for idx in zip(*np.unravel_index(flat, shape))]


@pytest.fixture
def free_pool():
    """CuPy's pool gives its blocks back after a case: the next case (or another worker) needs the memory."""
    yield
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
@pytest.mark.big
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hopper_at_the_index_boundary(case, big_selected, free_pool):
    import cupy

    from miofind.invokers import build_invoker, call
    from miofind.verify import poison, random_array, tolerance_for

    cid, key, n, loads = case
    s = get_solver(SOLVERS[key])
    p = _p(key[0], n)
    cfg = _config(s, p, loads)
    sol = s.get_solution(p, cfg)
    assert _index_types(s, p, cfg) == {INDEX[n]}
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
    unwritten = int(cupy.count_nonzero(~cupy.isfinite(out)))
    assert unwritten == 0, f"{cid}: {unwritten} output elements not written (still NaN) or not finite"

    idx = _sample(so, np.random.default_rng(seed))
    ref_of = {"F": _ref_f, "B": _ref_b, "W": _ref_w}[p.direction]
    ref = np.array([ref_of(a, b, i) for i in idx])
    got = np.array([float(out[i]) for i in idx])
    err = float(np.abs(got - ref).max()) / float(np.abs(ref).max())
    tol = tolerance_for(p, s.family).element
    assert err <= tol, (f"{cid} ({s.id} {cfg}, INDEX_T={INDEX[n]}): max element error {err:.3g} > {tol:.3g} over "
                        f"{len(idx)} sampled elements (seed {seed})")
