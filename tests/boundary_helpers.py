"""Shared by the 2^31-element index-boundary tests (tests/core/test_index_boundaries_gpu.py, the Hopper family's
tests/implicit_gemm_hopper/test_index_boundaries.py): one run of a solution on random inputs into a NaN-poisoned
output, the output elements it samples, and float64 references of single elements computed independently of the
kernels under test (dot products and sums of float64 copies, NumPy or CuPy, never the naive solver).

The references index arrays in channels-first order, (n, c, h, w) for activations and (k, c/g, r, s) for weights, with
stride 1 and dilation 1; a channels-last tensor is read through ``nchw_view``, a transposed view with no copy."""

from __future__ import annotations

import math

import numpy as np

from miofind.verify import _xp


def nchw_view(a, layout: str):
    """A 4-D tensor stored in ``layout`` seen in channels-first order (a view: nothing is copied)."""
    return a.transpose(0, 3, 1, 2) if layout == "NHWC" else a


def to_f64(a) -> np.ndarray:
    """A NumPy float64 copy of a NumPy or CuPy array."""
    xp = _xp(a)
    return (a if xp is np else xp.asnumpy(a)).astype(np.float64)


def sample(shape, rng, n_random=64) -> list[tuple[int, ...]]:
    """The first 2 and last 8 indices of ``shape`` and ``n_random`` drawn by ``rng`` (a NumPy Generator)."""
    total = math.prod(shape)
    flat = np.unique(np.concatenate([np.arange(2), np.arange(total - 8, total),
                                     rng.integers(0, total, size=n_random)]))
    return [tuple(int(v) for v in idx) for idx in zip(*np.unravel_index(flat, shape))]


def ref_f(x, w, p, idx) -> float:
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
                acc += float(np.dot(to_f64(x[n, c0:c0 + cpg, ih, iw]), to_f64(w[k, :, r, s])))
    return acc


def ref_b(dy, w, p, idx) -> float:
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
                acc += float(np.dot(to_f64(dy[n, k0:k0 + kpg, oh, ow]), to_f64(w[k0:k0 + kpg, c - g * cpg, r, s])))
    return acc


def ref_w_at(dy, x, p, idx) -> float:
    """dw[k, cl, r, s], summed over the batch in chunks of about 2^27 products."""
    xp = _xp(dy)
    k, cl, r, s = idx
    cpg, kpg = p.c // p.groups, p.k // p.groups
    c = (k // kpg) * cpg + cl
    (ph, pw) = p.pads
    (hi, wi), (ho, wo) = p.in_size, p.out_size
    oh0, oh1 = max(0, ph - r), min(ho, hi + ph - r)
    ow0, ow1 = max(0, pw - s), min(wo, wi + pw - s)
    step = max(1, (1 << 27) // (ho * wo))
    acc = 0.0
    for n0 in range(0, p.n, step):
        a = dy[n0:n0 + step, k, oh0:oh1, ow0:ow1].astype(xp.float64)
        b = x[n0:n0 + step, c, oh0 - ph + r:oh1 - ph + r, ow0 - pw + s:ow1 - pw + s].astype(xp.float64)
        acc += float(xp.vdot(a, b))
        del a, b
    return acc


def ref_w(dy, x, p) -> np.ndarray:
    """Every element of dw (k, c/g, r, s)."""
    out = np.zeros((p.k, p.c // p.groups, *p.filter_size))
    for idx in np.ndindex(out.shape):
        out[idx] = ref_w_at(dy, x, p, idx)
    return out


REFS = {"F": ref_f, "B": ref_b, "W": ref_w_at}     # one element each


def run(p, sol, seed: int):
    """Run ``sol`` (compiled here) on ``p``'s random inputs (CuPy, drawn from ``seed``) into a NaN-poisoned output;
    returns (a, b, out, the output elements left unwritten or not finite). The workspace is given back, and CuPy's
    pool with it."""
    import cupy

    from miofind.invokers import build_invoker, call
    from miofind.verify import poison, random_array

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
    return a, b, out, int(cupy.count_nonzero(~cupy.isfinite(out)))
