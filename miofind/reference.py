"""A float64 numpy reference for convolution F, B and W (CPU), independent of every kernel.

Tensors are in the forward view's memory layout of ``problem`` (NCHW/NHWC, NCDHW/NDHWC); the
computation runs in channels-first float64 and loops only over filter taps.
"""

from __future__ import annotations

import itertools

import numpy as np

from .problem import ProblemDescription


def _to_cf(a: np.ndarray, layout: str) -> np.ndarray:
    """Channels-first view of an array stored in ``layout``; 2D arrays gain a depth axis of 1."""
    if layout in ("NHWC", "NDHWC"):
        a = np.moveaxis(a, -1, 1)
    return a[:, :, None] if a.ndim == 4 else a


def _from_cf(a: np.ndarray, layout: str, nd: int) -> np.ndarray:
    if nd == 2:
        a = a[:, :, 0]
    if layout in ("NHWC", "NDHWC"):
        a = np.moveaxis(a, 1, -1)
    return np.ascontiguousarray(a)


def _dims3(p: ProblemDescription):
    pad = (lambda t, v: (v, *t)) if p.spatial_dims == 2 else (lambda t, v: tuple(t))
    return (pad(p.in_size, 1), pad(p.out_size, 1), pad(p.filter_size, 1), pad(p.pads, 0), pad(p.strides, 1),
            pad(p.dilations, 1))


def _pad_widths(isz, osz, fsz, pads, strides, dils):
    """(low, high) zero padding per spatial dim: the high side also covers outputs that reach past
    the padded input (a stated output size larger than the formula's)."""
    return [(p, max(p, (o - 1) * s + d * (f - 1) + 1 - i - p)) for i, o, f, p, s, d in zip(isz, osz, fsz, pads, strides, dils)]


def _tap_slices(o, taps, strides, dils):
    return tuple(slice(t * d, t * d + s * (oo - 1) + 1, s) for t, s, d, oo in zip(taps, strides, dils, o))


_SQRT2 = 2.0 ** 0.5


def apply_epilogue(out, problem: ProblemDescription, bias=None) -> None:
    """A fused problem's epilogue (``ProblemDescription.fused``) on its float64 output, in place, numpy
    or CuPy: + bias (k elements, along the y layout's channel axis), then ReLU or the exact GELU
    v * Phi(v) = v / 2 * (1 + erf(v / sqrt(2)))."""
    xp = np
    if type(out).__module__.startswith("cupy"):
        import cupy as xp
    if problem.bias:
        shape = [1] * out.ndim
        shape[out.ndim - 1 if problem.layouts[2] in ("NHWC", "NDHWC") else 1] = problem.k
        out += xp.asarray(bias, dtype=xp.float64).reshape(shape)
    if problem.activation == "relu":
        xp.maximum(out, 0.0, out=out)
    elif problem.activation == "gelu":
        if xp is np:
            import math
            erf = np.vectorize(math.erf, otypes=[np.float64])
        else:
            from cupyx.scipy.special import erf
        out *= 0.5 * (1.0 + erf(out / _SQRT2))


def conv_reference(problem: ProblemDescription, a: np.ndarray, b: np.ndarray, bias=None) -> np.ndarray:
    """The output of ``problem`` for inputs in the order of ``problem.io_shapes()``, in float64; a fused
    problem's epilogue with ``bias`` (float64-convertible, k elements) when it has one."""
    if problem.fused:
        y = conv_reference(problem.unfused(), a, b)
        apply_epilogue(y, problem, bias)
        return y
    p = problem
    if p.transposed:
        conv = p.as_conv()
        if p.direction == "W":
            a, b = b, a
        return conv_reference(conv, a, b)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    isz, osz, fsz, pads, strides, dils = _dims3(p)
    g, cpg, kpg = p.groups, p.c // p.groups, p.k // p.groups
    wl = p.layouts[1]
    nd = p.spatial_dims
    if p.direction == "F":
        x, w = _to_cf(a, p.layouts[0]), _to_cf(b, wl)
        xp = np.pad(x, [(0, 0), (0, 0)] + _pad_widths(isz, osz, fsz, pads, strides, dils))
        y = np.zeros((p.n, p.k, *osz))
        for tap in itertools.product(*(range(f) for f in fsz)):
            patch = xp[(slice(None), slice(None)) + _tap_slices(osz, tap, strides, dils)]
            for gi in range(g):
                y[:, gi * kpg:(gi + 1) * kpg] += np.einsum(
                    "ncdhw,kc->nkdhw", patch[:, gi * cpg:(gi + 1) * cpg], w[gi * kpg:(gi + 1) * kpg, :, tap[0], tap[1], tap[2]])
        return _from_cf(y, p.layouts[2], nd)
    if p.direction == "B":
        dy, w = _to_cf(a, p.layouts[2]), _to_cf(b, wl)
        dxp = np.zeros((p.n, p.c, *(i + lo + hi for i, (lo, hi) in zip(isz, _pad_widths(isz, osz, fsz, pads, strides, dils)))))
        for tap in itertools.product(*(range(f) for f in fsz)):
            sl = (slice(None), slice(None)) + _tap_slices(osz, tap, strides, dils)
            view = dxp[sl]
            for gi in range(g):
                view[:, gi * cpg:(gi + 1) * cpg] += np.einsum(
                    "nkdhw,kc->ncdhw", dy[:, gi * kpg:(gi + 1) * kpg], w[gi * kpg:(gi + 1) * kpg, :, tap[0], tap[1], tap[2]])
        crop = (slice(None), slice(None)) + tuple(slice(q, q + i) for q, i in zip(pads, isz))
        return _from_cf(dxp[crop], p.layouts[0], nd)
    dy, x = _to_cf(a, p.layouts[2]), _to_cf(b, p.layouts[0])
    xp = np.pad(x, [(0, 0), (0, 0)] + _pad_widths(isz, osz, fsz, pads, strides, dils))
    dw = np.zeros((p.k, cpg, *fsz))
    for tap in itertools.product(*(range(f) for f in fsz)):
        patch = xp[(slice(None), slice(None)) + _tap_slices(osz, tap, strides, dils)]
        for gi in range(g):
            dw[gi * kpg:(gi + 1) * kpg, :, tap[0], tap[1], tap[2]] = np.einsum(
                "nkdhw,ncdhw->kc", dy[:, gi * kpg:(gi + 1) * kpg], patch[:, gi * cpg:(gi + 1) * cpg])
    return _from_cf(dw, wl, nd)
