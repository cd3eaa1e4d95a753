"""A numpy float32 emulation of the Winograd kernels' operation order (test-only): it measured the
accuracy figures in solvers/winograd_base.py's docstring and backs the CPU accuracy tests."""

from __future__ import annotations

import numpy as np

from miofind.solver import ceil_div


def _input_1d(d, m):
    if m == 2:
        d0, d1, d2, d3 = d
        return [d0 - d2, d1 + d2, d2 - d1, d1 - d3]
    d0, d1, d2, d3, d4, d5 = d
    f = np.float32
    a, b = d4 - f(4) * d2, d3 - f(4) * d1
    c, e = d4 - d2, f(2) * (d3 - d1)
    return [f(4) * d0 - f(5) * d2 + d4, a + b, a - b, c + e, c - e, f(4) * d1 - f(5) * d3 + d5]


def _filter_1d(g, m):
    f = np.float32
    g0, g1, g2 = g
    if m == 2:
        s, h = f(.5) * (g0 + g2), f(.5) * g1
        return [g0, s + h, s - h, g2]
    s, p, q = g0 + g2, g0 * f(1 / 24) + g2 * f(1 / 6), g1 * f(1 / 12)
    return [f(.25) * g0, -(s + g1) * f(1 / 6), -(s - g1) * f(1 / 6), p + q, p - q, g2]


def _output_1d(v, m):
    if m == 2:
        return [v[0] + v[1] + v[2], v[1] - v[2] - v[3]]
    a, b, c, d = v[1] + v[2], v[1] - v[2], v[3] + v[4], v[3] - v[4]
    return [v[0] + a + c, b + np.float32(2) * d, a + np.float32(4) * c, b + np.float32(8) * d + v[5]]


def _apply_2d(fn, t, m):
    """fn along axis -2 (columns), then along axis -1 (rows), of a [..., r, s] array."""
    cols = np.stack(fn([t[..., i, :] for i in range(t.shape[-2])], m), axis=-2)
    return np.stack(fn([cols[..., j] for j in range(cols.shape[-1])], m), axis=-1)


def emulate(x, w, m: int, pads=(1, 1), gemm_round=None):
    """Forward Winograd F(m x m, 3x3) of NCHW float32 x (N, C, H, W) and w (K, C, 3, 3), groups 1,
    in float32 with the kernels' operation order; ``gemm_round`` models the GEMM input rounding
    (e.g. to TF32). Returns the float32 result (N, K, Ho, Wo)."""
    x, w = np.asarray(x, np.float32), np.asarray(w, np.float32)
    n, c, h, wd = x.shape
    ho, wo = h + 2 * pads[0] - 2, wd + 2 * pads[1] - 2
    th, tw = ceil_div(ho, m), ceil_div(wo, m)
    xp = np.zeros((n, c, th * m + 2, tw * m + 2), np.float32)
    hs, ws = min(h, th * m + 2 - pads[0]), min(wd, tw * m + 2 - pads[1])
    xp[:, :, pads[0]:pads[0] + hs, pads[1]:pads[1] + ws] = x[:, :, :hs, :ws]
    d = np.stack([np.stack([xp[:, :, i * m:i * m + m + 2, j * m:j * m + m + 2] for j in range(tw)], 2)
                  for i in range(th)], 2)                                  # N C TH TW a a
    v = _apply_2d(_input_1d, d, m)
    u = _apply_2d(_filter_1d, w, m)                                        # K C a a
    if gemm_round is not None:
        u, v = gemm_round(u), gemm_round(v)
    mt = np.einsum("nctuij,kcij->nktuij", v, u).astype(np.float32)
    y = _apply_2d(_output_1d, mt, m)                                       # N K TH TW m m
    return y.transpose(0, 1, 2, 4, 3, 5).reshape(n, -1, th * m, tw * m)[:, :, :ho, :wo]
