"""Index arithmetic at the 32/64-bit boundary for the Hopper implicit-GEMM family: every solver of the family that
applies to a plain problem (F, B and W; NHWC FP16, its copy-engine-store forward and swapped-operand variants, the
TF32 (``math="tf32"``) solvers, and the NCHW wrappers), on 3x3 problems of 64 -> 64 channels at 256 x 256 whose
activations hold n x 2^22 elements: just under 2^31 (n = 511, 32-bit offsets) and just over it (n = 513, 64-bit
offsets: at n = 512 the last element's index, 2^31 - 1, would still fit 32 bits). The three base solvers run at their
default config (the copy engine) and at the same tile with 16-byte cp.async loads (the offsets computed in the
kernel); the others at their default config. The padded copy-engine K tiles (96 channels in the reduction, F and B;
backward weights' padded columns) at n = 341 and 342, whose largest tensor, n x 6 x 2^20 elements, is just under and
just over 2^31; F and B also at their default tile with 32-deep K tiles (TMA = 2: 64-byte rows, 32-channel boxes).
F and B (64 channels) also at their default tile with the filter resident in shared memory (PERSIST = 2).

The CPU tests pin that each case applies and the index type its kernels are built with (``INDEX_T``), and check the
float64 references it shares with the core boundary test (tests/boundary_helpers.py) against a direct NumPy convolution
on small problems in both layouts, grouped and not. The GPU test
(markers ``gpu`` and ``big``: up to about 60 GB of GPU memory a case, with CuPy's float64 draws and an NCHW wrapper's
channels-last copies; skipped unless selected with ``-m big`` or MIOFIND_BIG_TESTS=1) runs each case on random inputs
into a NaN-poisoned output, checks that every output element was written, and compares against that reference at 64
random output elements plus the first 2 and the last 8 (read through channels-first views; dot products of float64
copies for F and B, float64 sums over the batch for W); the bound is ``verify.tolerance_for``'s per-element one,
relative to the largest sampled reference magnitude.
"""

from __future__ import annotations

import math
import os

import boundary_helpers as bh
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
# the padded copy-engine K tiles (test_tma_padded.py): 96 channels in the reduction, the forward's x and backward data's
# dy, each tap's K tiles padded to 128 (the default at 96 channels), and 96 in the output too: the copy engine reads
# the input through its maps without the kernel's offsets, so the output, which the kernel's epilogue addresses, must
# cross 2^31 as well (with 64 output channels it stayed under, and a 32-bit build passed: session nov29h call 8)
# Backward weights' padded columns (W_PAD; x's 96 channels, 3x3: the default pads) read x and dy, both past 2^31
# elements, through the copy engine's maps only; the kernel's own offsets address dw and its split's partial planes,
# far below 2^31, so no 32-bit build can fail this case: it checks the maps and the padded columns at that size, and
# has no negative control
PADDED = {"Fpad": ("ConvImplicitGemmHopperFwd", "F", dict(c=96, k=96)),
          "Bpad": ("ConvImplicitGemmHopperBwd", "B", dict(c=96, k=96)),
          "Wpad": ("ConvImplicitGemmHopperWrw", "W", dict(c=96, k=96))}
SOLVERS.update({key: (sid, d, "NHWC", "FP16", "strict") for key, (sid, d, _) in PADDED.items()})
WITH_CP_ASYNC = ("F", "B", "W")     # the base solvers: also at their default tile with cp.async loads
INDEX = {511: "int", 513: "long long"}      # largest tensor n x 256 x 256 x 64 = n x 2^22 elements
# the padded cases' n: 341 x 6 x 2^20 elements just under 2^31, 342 x 6 x 2^20 just over
PADDED_INDEX = {341: "int", 342: "long long"}


def _index(key: str) -> dict:
    return PADDED_INDEX if key in PADDED else INDEX


def _p(key: str, n: int, **sizes) -> ProblemDescription:
    _, d, layout, dt, math_ = SOLVERS[key]
    kw = dict(n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1)
    kw.update(PADDED[key][2] if key in PADDED else {})
    kw.update(sizes)
    return ProblemDescription.make(d, layout=layout, dtype=dt, math=math_, **kw)


def _config(solver, p, loads: str) -> dict:
    """The default config, or (``cp.async``) the same with the copy engine off where that is valid, else the first
    such config of the space, or (``row64``) the default with 32-deep K tiles, or (``resident``) the default with all
    of the filter resident (PERSIST = 2)."""
    d = solver.default_config(p)
    if loads == "default":
        return d
    if loads == "row64":
        return dict(d, TMA=2)
    if loads == "resident":
        return dict(d, PERSIST=2)
    for c in (dict(d, TMA=0), dict(d, TMA=0, PERSIST=0)):
        if solver.is_valid_config(p, c):
            return c
    return next(c for c in solver.config_space(p) if not c.get("TMA", 1))


WITH_ROW64 = ("Fpad", "Bpad")      # also at their default tile with 32-deep K tiles (TMA = 2)
WITH_RESIDENT = ("F", "B")          # also at their default tile with the filter resident (PERSIST = 2)
CASES = [(f"{key}-n{n}-{loads}", key, n, loads) for key in SOLVERS for n in _index(key)
         for loads in (("default", "cp.async") + (("resident",) if key in WITH_RESIDENT else ()) if key in WITH_CP_ASYNC
                       else ("default", "row64") if key in WITH_ROW64 else ("default",))]


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
        if loads == "resident":
            assert cfg["PERSIST"] == 2 and s.default_config(p)["PERSIST"] == 1, (cid, cfg)
        if key in PADDED and SOLVERS[key][1] == "W":
            from miofind.solvers import implicit_gemm_hopper_wrw as wrw
            assert wrw.padded_columns(p) and cfg["TMA"] == 1 and wrw.gemm_cols(p, cfg) == 9 * 128, (cid, cfg)
        elif key in PADDED:
            from miofind.solvers import implicit_gemm_hopper_base as hb
            assert hb.padded_default(s.forward_problem(p)) and cfg["PERSIST"] == 1, (cid, cfg)
            assert cfg["TMA"] == (2 if loads == "row64" else 1), (cid, cfg)
        assert max(math.prod(sh) for sh in p.io_shapes()) == (n * 6 << 20 if key in PADDED else n << 22), cid
        assert _index_types(s, p, cfg) == {_index(key)[n]}, cid


# -- the shared float64 references (tests/boundary_helpers.py), checked on small problems ------------------------------

@pytest.mark.parametrize("layout", ("NHWC", "NCHW"))
@pytest.mark.parametrize("groups", (1, 2))
def test_references_equal_a_direct_convolution(layout, groups):
    """The shared references, reading channels-first views of small random tensors stored in either layout, against
    NumPy's sums of the padded input's windows (y = sum over r, s of x_pad[:, r:r+H, s:s+W, group's c] . w[:, r, s, :]),
    grouped and not; the core boundary test's W compares every element of ``ref_w``."""
    rng = np.random.default_rng(7)
    n, c, k, h, wd = 3, 4, 6, 6, 7
    cpg, kpg = c // groups, k // groups
    x = rng.uniform(-1, 1, (n, h, wd, c))
    w = rng.uniform(-1, 1, (k, 3, 3, cpg))
    xp_ = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    dy = rng.uniform(-1, 1, (n, h, wd, k))
    y, dxp, dw = np.zeros_like(dy), np.zeros_like(xp_), np.zeros_like(w)
    for g in range(groups):
        ks, cs = slice(g * kpg, (g + 1) * kpg), slice(g * cpg, (g + 1) * cpg)
        for r in range(3):
            for s in range(3):
                win = xp_[:, r:r + h, s:s + wd, cs]
                y[..., ks] += np.einsum("nhwc,kc->nhwk", win, w[ks, r, s, :])
                dxp[:, r:r + h, s:s + wd, cs] += np.einsum("nhwk,kc->nhwc", dy[..., ks], w[ks, r, s, :])
                dw[ks, r, s, :] = np.einsum("nhwk,nhwc->kc", dy[..., ks], win)
    dx = dxp[:, 1:1 + h, 1:1 + wd, :]
    # stored in the layout, then read through channels-first views as the GPU tests read their arrays
    store = (lambda a: np.ascontiguousarray(a.transpose(0, 3, 1, 2))) if layout == "NCHW" else (lambda a: a)
    X, W, DY = (bh.nchw_view(store(t), layout) for t in (x, w, dy))
    prob = {d: ProblemDescription.make(d, n=n, c=c, k=k, groups=groups, in_size=(h, wd), filter_size=3, pads=1,
                                       layout=layout) for d in "FBW"}
    for direction, (a, b), full in (("F", (X, W), y), ("B", (DY, W), dx)):
        full = full.transpose(0, 3, 1, 2)
        for idx in bh.sample(full.shape, rng, 16):
            got = bh.REFS[direction](a, b, prob[direction], idx)
            assert got == pytest.approx(full[idx], rel=1e-12, abs=1e-12), (direction, idx)
    assert bh.ref_w(DY, X, prob["W"]) == pytest.approx(dw.transpose(0, 3, 1, 2), rel=1e-12, abs=1e-12)


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
    from miofind.verify import tolerance_for

    layout = SOLVERS[key][2]
    s = get_solver(SOLVERS[key][0])
    p = _p(key, n)
    cfg = _config(s, p, loads)
    sol = s.get_solution(p, cfg)
    if edit is not None:
        sol = edit(sol)
    seed = int.from_bytes(os.urandom(4), "little")
    a, b, out, unwritten = bh.run(p, sol, seed)
    va, vb, vo = (bh.nchw_view(t, layout) for t in (a, b, out))
    idx = bh.sample(vo.shape, np.random.default_rng(seed))
    ref_of = bh.REFS[p.direction]
    ref = np.array([ref_of(va, vb, p, i) for i in idx])
    got = np.array([float(vo[i]) for i in idx])
    err = float(np.nanmax(np.abs(got - ref))) / float(np.abs(ref).max()) if np.isfinite(got).any() else float("inf")
    what = f"{s.id} {cfg}: {len(idx)} sampled elements (seed {seed})"
    return unwritten, err, tolerance_for(p, s.family).element, what


@pytest.mark.gpu
@pytest.mark.big
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hopper_at_the_index_boundary(case, big_selected, free_pool, monkeypatch):
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")
    cid, key, n, loads = case
    s = get_solver(SOLVERS[key][0])
    p = _p(key, n)
    assert _index_types(s, p, _config(s, p, loads)) == {_index(key)[n]}
    unwritten, err, tol, what = run_case(key, n, loads)
    assert unwritten == 0, f"{cid}: {unwritten} output elements not written (still NaN) or not finite"
    assert err <= tol, f"{cid} ({what}, INDEX_T={_index(key)[n]}): max element error {err:.3g} > {tol:.3g}"
