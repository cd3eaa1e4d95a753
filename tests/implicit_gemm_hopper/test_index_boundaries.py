"""Index arithmetic at the 32/64-bit boundary for the Hopper implicit-GEMM family: every solver of the family that
applies to a plain problem (F, B and W; NHWC FP16, its copy-engine-store forward and swapped-operand variants, the
TF32 (``math="tf32"``) solvers, and the NCHW wrappers), on 3x3 problems of 64 -> 64 channels at 256 x 256 whose
activations hold n x 2^22 elements: just under 2^31 (n = 511, 32-bit offsets) and just over it (n = 513, 64-bit
offsets: at n = 512 the last element's index, 2^31 - 1, would still fit 32 bits). The three base solvers run at their
default config (the copy engine) and at the same tile with 16-byte cp.async loads (the offsets computed in the
kernel); the others at their default config.

The CPU tests pin that each case applies and the index type its kernels are built with (``INDEX_T``), and check the
test's own float64 references against a direct NumPy convolution on small problems in both layouts. The GPU test
(markers ``gpu`` and ``big``: up to about 60 GB of GPU memory a case, with CuPy's float64 draws and an NCHW wrapper's
channels-last copies; skipped unless selected with ``-m big`` or MIOFIND_BIG_TESTS=1) runs each case on random inputs
into a NaN-poisoned output, checks that every output element was written, and compares against that reference at 64
random output elements plus the first 2 and the last 8 (dot products of float64 copies for F and B, float64 sums over
the batch for W); the bound is ``verify.tolerance_for``'s per-element one, relative to the largest sampled reference
magnitude.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from miofind.problem import ProblemDescription
from miofind.registry import get_solver

# case key -> (solver, direction, layout, data type, math)
SOLVERS = {
    "F": ("ConvImplicitGemmHopperFwd", "F", "NHWC", "FP16", "strict"),
    "Fstore": ("ConvImplicitGemmHopperFwdTmaStore", "F", "NHWC", "FP16", "strict"),
    "Fswap": ("ConvImplicitGemmHopperFwdSwap", "F", "NHWC", "FP16", "strict"),
    "Ftf32": ("ConvImplicitGemmHopperFwdTf32Rn", "F", "NHWC", "FP32", "tf32"),
    "Fnchw": ("ConvImplicitGemmHopperFwdNchw", "F", "NCHW", "FP16", "strict"),
    "Fswap_nchw": ("ConvImplicitGemmHopperFwdSwapNchw", "F", "NCHW", "FP16", "strict"),
    "Ftf32_nchw": ("ConvImplicitGemmHopperFwdTf32RnNchw", "F", "NCHW", "FP32", "tf32"),
    "B": ("ConvImplicitGemmHopperBwd", "B", "NHWC", "FP16", "strict"),
    "Bswap": ("ConvImplicitGemmHopperBwdSwap", "B", "NHWC", "FP16", "strict"),
    "Btf32": ("ConvImplicitGemmHopperBwdTf32Rn", "B", "NHWC", "FP32", "tf32"),
    "Bnchw": ("ConvImplicitGemmHopperBwdNchw", "B", "NCHW", "FP16", "strict"),
    "Bswap_nchw": ("ConvImplicitGemmHopperBwdSwapNchw", "B", "NCHW", "FP16", "strict"),
    "Btf32_nchw": ("ConvImplicitGemmHopperBwdTf32RnNchw", "B", "NCHW", "FP32", "tf32"),
    "W": ("ConvImplicitGemmHopperWrw", "W", "NHWC", "FP16", "strict"),
    "Wtf32": ("ConvImplicitGemmHopperWrwTf32Rn", "W", "NHWC", "FP32", "tf32"),
    "Wnchw": ("ConvImplicitGemmHopperWrwNchw", "W", "NCHW", "FP16", "strict"),
    "Wtf32_nchw": ("ConvImplicitGemmHopperWrwTf32RnNchw", "W", "NCHW", "FP32", "tf32"),
}
WITH_CP_ASYNC = ("F", "B", "W")     # the base solvers: also at their default tile with cp.async loads
INDEX = {511: "int", 513: "long long"}      # largest tensor n x 256 x 256 x 64 = n x 2^22 elements


def _p(key: str, n: int, **sizes) -> ProblemDescription:
    _, d, layout, dt, math_ = SOLVERS[key]
    kw = dict(n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1)
    kw.update(sizes)
    return ProblemDescription.make(d, layout=layout, dtype=dt, math=math_, **kw)


def _config(solver, p, loads: str) -> dict:
    """The default config, or (``cp.async``) the same with the copy engine off where that is valid, else the first
    such config of the space."""
    d = solver.default_config(p)
    if loads == "default":
        return d
    for c in (dict(d, TMA=0), dict(d, TMA=0, PERSIST=0)):
        if solver.is_valid_config(p, c):
            return c
    return next(c for c in solver.config_space(p) if not c.get("TMA", 1))


CASES = [(f"{key}-n{n}-{loads}", key, n, loads) for key in SOLVERS for n in INDEX
         for loads in (("default", "cp.async") if key in WITH_CP_ASYNC else ("default",))]


def _index_types(solver, p, cfg) -> set:
    return {dict(k.macros)["INDEX_T"] for k in solver.get_solution(p, cfg).kernels if "INDEX_T" in dict(k.macros)}


def test_cases_apply_and_choose_the_index_width(no_gpu_arch, monkeypatch):
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")
    for cid, key, n, loads in CASES:
        s = get_solver(SOLVERS[key][0])
        p = _p(key, n)
        assert s.applicability(p), cid
        cfg = _config(s, p, loads)
        assert s.is_valid_config(p, cfg), (cid, cfg)
        if loads == "cp.async":
            assert cfg.get("TMA", 1) == 0 and s.default_config(p).get("TMA") == 1, (cid, cfg)
        assert max(math.prod(sh) for sh in p.io_shapes()) == n << 22
        assert _index_types(s, p, cfg) == {INDEX[n]}, cid


# -- the float64 references, on logical (n, h, w, c) views of either layout ------------------------------------------

def _nhwc(a, layout: str):
    """A view of an activation (or of the filter: k, r, s, c) in channels-last order."""
    return a.transpose(0, 2, 3, 1) if layout == "NCHW" else a


def _xp(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def _f64(a) -> np.ndarray:
    xp = _xp(a)
    return (a if xp is np else xp.asnumpy(a)).astype(np.float64)


def _ref_f(x, w, idx) -> float:
    # y[n, oh, ow, k] = sum over the taps inside x of x[n, oh - 1 + r, ow - 1 + s, :] . w[k, r, s, :]
    n, oh, ow, k = idx
    acc = 0.0
    for r in range(w.shape[1]):
        for s in range(w.shape[2]):
            ih, iw = oh - 1 + r, ow - 1 + s
            if 0 <= ih < x.shape[1] and 0 <= iw < x.shape[2]:
                acc += float(np.dot(_f64(x[n, ih, iw, :]), _f64(w[k, r, s, :])))
    return acc


def _ref_b(dy, w, idx) -> float:
    # dx[n, ih, iw, c] = sum over the taps inside dy of dy[n, ih + 1 - r, iw + 1 - s, :] . w[:, r, s, c]
    n, ih, iw, c = idx
    acc = 0.0
    for r in range(w.shape[1]):
        for s in range(w.shape[2]):
            oh, ow = ih + 1 - r, iw + 1 - s
            if 0 <= oh < dy.shape[1] and 0 <= ow < dy.shape[2]:
                acc += float(np.dot(_f64(dy[n, oh, ow, :]), _f64(w[:, r, s, c])))
    return acc


def _ref_w(dy, x, idx) -> float:
    # dw[k, r, s, c] = sum over n and the output pixels whose tap lies inside x of
    #                 dy[n, oh, ow, k] x[n, oh - 1 + r, ow - 1 + s, c]
    xp = _xp(dy)
    k, r, s, c = idx
    ho, wo = dy.shape[1], dy.shape[2]
    oh0, oh1, ow0, ow1 = max(0, 1 - r), min(ho, x.shape[1] + 1 - r), max(0, 1 - s), min(wo, x.shape[2] + 1 - s)
    acc = 0.0
    step = 64
    for n0 in range(0, dy.shape[0], step):
        a = dy[n0:n0 + step, oh0:oh1, ow0:ow1, k].astype(xp.float64)
        b = x[n0:n0 + step, oh0 - 1 + r:oh1 - 1 + r, ow0 - 1 + s:ow1 - 1 + s, c].astype(xp.float64)
        acc += float(xp.vdot(a, b))
    return acc


REFS = {"F": _ref_f, "B": _ref_b, "W": _ref_w}


def _sample(shape, rng, n_random=64):
    total = math.prod(shape)
    flat = np.unique(np.concatenate([np.arange(2), np.arange(total - 8, total), rng.integers(0, total, size=n_random)]))
    return [tuple(int(v) for v in idx) for idx in zip(*np.unravel_index(flat, shape))]


@pytest.mark.parametrize("layout", ("NHWC", "NCHW"))
def test_references_equal_a_direct_convolution(layout):
    """The references above, on views of small random tensors in either layout, against NumPy's sums of the padded
    input's windows (y = sum over r, s of x_pad[:, r:r+H, s:s+W, :] . w[:, r, s, :])."""
    rng = np.random.default_rng(7)
    n, c, k, h, wd = 3, 5, 4, 6, 7
    x = rng.uniform(-1, 1, (n, h, wd, c))
    w = rng.uniform(-1, 1, (k, 3, 3, c))
    xp_ = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    y = sum(np.einsum("nhwc,kc->nhwk", xp_[:, r:r + h, s:s + wd, :], w[:, r, s, :]) for r in range(3) for s in range(3))
    dy = rng.uniform(-1, 1, y.shape)
    # dx = the transposed correlation; dw[k, r, s, c] = sum of dy[..., k] x_pad[:, r:r+H, s:s+W, c]
    dxp = np.zeros_like(xp_)
    for r in range(3):
        for s in range(3):
            dxp[:, r:r + h, s:s + wd, :] += np.einsum("nhwk,kc->nhwc", dy, w[:, r, s, :])
    dx = dxp[:, 1:1 + h, 1:1 + wd, :]
    dw = np.stack([np.stack([np.einsum("nhwk,nhwc->kc", dy, xp_[:, r:r + h, s:s + wd, :]) for s in range(3)], 1)
                   for r in range(3)], 1)
    # stored in the layout, then read through the channels-last views as the GPU test reads its arrays
    store = (lambda a: np.ascontiguousarray(a.transpose(0, 3, 1, 2))) if layout == "NCHW" else (lambda a: a)
    X, W, Y, DY = (_nhwc(store(a), layout) for a in (x, w, y, dy))
    for direction, (a, b), full in (("F", (X, W), y), ("B", (DY, W), dx), ("W", (DY, X), dw)):
        for idx in _sample(full.shape, rng, 16):
            assert REFS[direction](a, b, idx) == pytest.approx(full[idx], rel=1e-12, abs=1e-12), (direction, idx)


@pytest.fixture
def free_pool():
    """CuPy's pool gives its blocks back after a case: the next case (or another worker) needs the memory."""
    yield
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()


def run_case(key: str, n: int, loads: str, edit=None) -> tuple[int, float, float, str]:
    """Run one case on the GPU: (output elements left unwritten or not finite, max sampled element error relative to
    the largest sampled reference, its bound, what was compared). ``edit``: a function of the ConvSolution giving
    the one to run instead (a negative control, e.g. its kernels rebuilt with 32-bit offsets)."""
    import cupy

    from miofind.invokers import build_invoker, call
    from miofind.verify import poison, random_array, tolerance_for

    layout = SOLVERS[key][2]
    s = get_solver(SOLVERS[key][0])
    p = _p(key, n)
    cfg = _config(s, p, loads)
    sol = s.get_solution(p, cfg)
    if edit is not None:
        sol = edit(sol)
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
    va, vb, vo = (_nhwc(t, layout) for t in (a, b, out))
    idx = _sample(vo.shape, np.random.default_rng(seed))
    ref = np.array([REFS[p.direction](va, vb, i) for i in idx])
    got = np.array([float(vo[i]) for i in idx])
    err = float(np.nanmax(np.abs(got - ref))) / float(np.abs(ref).max()) if np.isfinite(got).any() else float("inf")
    return unwritten, err, tolerance_for(p, s.family).element, f"{s.id} {cfg}: {len(idx)} sampled elements (seed {seed})"


@pytest.mark.gpu
@pytest.mark.big
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hopper_at_the_index_boundary(case, big_selected, free_pool, monkeypatch):
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")
    cid, key, n, loads = case
    s = get_solver(SOLVERS[key][0])
    p = _p(key, n)
    assert _index_types(s, p, _config(s, p, loads)) == {INDEX[n]}
    unwritten, err, tol, what = run_case(key, n, loads)
    assert unwritten == 0, f"{cid}: {unwritten} output elements not written (still NaN) or not finite"
    assert err <= tol, f"{cid} ({what}, INDEX_T={INDEX[n]}): max element error {err:.3g} > {tol:.3g}"
