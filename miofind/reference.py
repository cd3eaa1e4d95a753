"""The float64 reference for convolution F, B and W, independent of every solver's kernels.

Tensors are in the forward view's memory layout of ``problem`` (NCHW/NHWC, NCDHW/NDHWC); the
computation runs in channels-first float64 and loops only over filter taps, each tap one product of
the tap's strided input view with the tap's weights, batched over the groups. With numpy arrays it
runs on the CPU (tests); with CuPy arrays on the GPU, where each product is a float64 GEMM (cuBLAS
DGEMM), the harness's reference for verification (``miofind.harness.Reference``).
"""

from __future__ import annotations

import itertools

import numpy as np

from .problem import ProblemDescription


def _to_cf(a, layout: str):
    """Channels-first view of an array (numpy or CuPy) stored in ``layout``; 2D arrays gain a depth
    axis of 1."""
    if layout in ("NHWC", "NDHWC"):
        a = _xp(a).moveaxis(a, -1, 1)
    return a[:, :, None] if a.ndim == 4 else a


def _from_cf(a, layout: str, nd: int):
    xp = _xp(a)
    if nd == 2:
        a = a[:, :, 0]
    if layout in ("NHWC", "NDHWC"):
        a = xp.moveaxis(a, 1, -1)
    return xp.ascontiguousarray(a)


def _dims3(p: ProblemDescription):
    pad = (lambda t, v: (v, *t)) if p.spatial_dims == 2 else (lambda t, v: tuple(t))
    return (pad(p.in_size, 1), pad(p.out_size, 1), pad(p.filter_size, 1), pad(p.pads, 0), pad(p.strides, 1),
            pad(p.dilations, 1))


def _pad_widths(isz, osz, fsz, pads, strides, dils):
    """(low, high) zero padding per spatial dim: the high side also covers outputs that reach past
    the padded input (a stated output size larger than the formula's)."""
    return [(p, max(p, (o - 1) * s + d * (f - 1) + 1 - i - p)) for i, o, f, p, s, d in zip(isz, osz, fsz, pads, strides, dils)]


def _padded(xp, x, widths):
    """``x`` (n, c, *spatial) with ``widths`` (low, high) zeros around each spatial dim; ``x`` itself where
    there are none. One memset and one copy of x: ``xp.pad`` also fills each border with its own kernel,
    which CuPy compiles per rank and stride pattern of the border (a new model's pads cost 100-300 ms each)."""
    if not any(lo or hi for lo, hi in widths):
        return x
    out = xp.zeros(x.shape[:2] + tuple(i + lo + hi for i, (lo, hi) in zip(x.shape[2:], widths)), dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + i) for i, (lo, _) in zip(x.shape[2:], widths))] = x
    return out


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


def _xp(a):
    if type(a).__module__.startswith("cupy"):
        import cupy
        return cupy
    return np


def conv_reference(problem: ProblemDescription, a, b, bias=None, *, max_bytes: int | None = None):
    """The output of ``problem`` for inputs in the order of ``problem.io_shapes()``, in float64; a fused
    problem's epilogue with ``bias`` (float64-convertible, k elements) when it has one.

    numpy inputs give a numpy result (CPU); CuPy inputs a CuPy result on their device, where each filter
    tap is one float64 GEMM per group batch (cuBLAS DGEMM through ``cupy.einsum``). ``max_bytes`` bounds
    the temporaries (padded input, one tap's patch and product): the batch is then taken in chunks of
    at least one sample (``reference_chunk``), W summing over them."""
    if problem.fused:
        y = conv_reference(problem.unfused(), a, b, max_bytes=max_bytes)
        apply_epilogue(y, problem, bias)
        return y
    p = problem
    if p.transposed:
        conv = p.as_conv()
        if p.direction == "W":
            a, b = b, a
        return conv_reference(conv, a, b, max_bytes=max_bytes)
    xp = _xp(a)
    a = xp.asarray(a, dtype=xp.float64)
    b = xp.asarray(b, dtype=xp.float64)
    n = a.shape[0]
    step = reference_chunk(p, n, max_bytes)
    if step >= n:
        return _conv(p, a, b, xp)
    if p.direction == "W":        # dw sums over the batch: add the chunks' sums
        out = None
        for i in range(0, n, step):
            part = _conv(p, a[i:i + step], b[i:i + step], xp)
            if out is None:
                out = part
            else:
                out += part
        return out
    out = xp.empty((n, *_conv_shape_tail(p)), dtype=xp.float64)
    for i in range(0, n, step):
        out[i:i + step] = _conv(p, a[i:i + step], b, xp)
    return out


def _conv_shape_tail(p: ProblemDescription) -> tuple:
    """The output's shape after the batch axis, in its layout (F: y, B: dx)."""
    return tuple(p.io_shapes()[2][1:])


def reference_chunk(p: ProblemDescription, n: int, max_bytes: int | None) -> int:
    """The batch samples ``conv_reference`` takes at once out of ``n``: all of them without ``max_bytes``,
    else as many as fit it (``reference_bytes_per_sample``), at least one."""
    return n if max_bytes is None else max(1, min(n, max_bytes // max(1, reference_bytes_per_sample(p))))


def reference_bytes_per_sample(p: ProblemDescription) -> int:
    """Bytes of float64 temporaries ``conv_reference`` holds per batch sample (padded input, a tap's
    patch and its product, the output), an upper bound used to size its chunks."""
    p = p.as_conv()
    isz, osz, fsz, pads, strides, dils = _dims3(p)
    padded = 1
    for i, (lo, hi) in zip(isz, _pad_widths(isz, osz, fsz, pads, strides, dils)):
        padded *= i + lo + hi
    o = int(np.prod(osz))
    return 8 * (p.c * padded + p.c * o + 2 * p.k * o + p.c * int(np.prod(isz)))


def _einsum(xp, spec: str, x, y):
    """A two-operand contraction: CuPy's einsum runs it as (batched) GEMMs; numpy's as BLAS with
    ``optimize``."""
    return np.einsum(spec, x, y, optimize=True) if xp is np else xp.einsum(spec, x, y)


def _taps(fsz):
    return itertools.product(*(range(f) for f in fsz))


def _conv(p: ProblemDescription, a, b, xp):
    """F, B or W of a plain (not transposed, not fused) problem on float64 arrays of ``xp``, for the
    batch of ``a`` (its first axis)."""
    isz, osz, fsz, pads, strides, dils = _dims3(p)
    g, cpg, kpg = p.groups, p.c // p.groups, p.k // p.groups
    wl = p.layouts[1]
    nd = p.spatial_dims
    n = a.shape[0]
    widths = _pad_widths(isz, osz, fsz, pads, strides, dils)
    if p.direction == "F":
        # y[n, g, k] += sum_c x_tap[n, g, c] w_tap[g, k, c] per filter tap: one batched GEMM over the groups
        x, w = _to_cf(a, p.layouts[0]), _to_cf(b, wl)
        xpad = _padded(xp, x, widths)
        y = xp.zeros((n, p.k, *osz))
        for tap in _taps(fsz):
            patch = xpad[(slice(None), slice(None)) + _tap_slices(osz, tap, strides, dils)]
            wt = w[:, :, tap[0], tap[1], tap[2]].reshape(g, kpg, cpg)
            pg = patch.reshape(n, g, cpg, *osz)
            if cpg == 1:
                r = pg * wt[None, :, :, 0, None, None, None]
            else:
                r = _einsum(xp, "ngcdhw,gkc->ngkdhw", pg, wt)
            y += r.reshape(n, p.k, *osz)
        return _from_cf(y, p.layouts[2], nd)
    if p.direction == "B":
        # dx_tap[n, g, c] += sum_k dy[n, g, k] w_tap[g, k, c], scattered back through the tap's strided view
        dy, w = _to_cf(a, p.layouts[2]), _to_cf(b, wl)
        dxp = xp.zeros((n, p.c, *(i + lo + hi for i, (lo, hi) in zip(isz, widths))))
        dyg = dy.reshape(n, g, kpg, *osz)
        for tap in _taps(fsz):
            view = dxp[(slice(None), slice(None)) + _tap_slices(osz, tap, strides, dils)]
            wt = w[:, :, tap[0], tap[1], tap[2]].reshape(g, kpg, cpg)
            if kpg == 1:
                r = dyg * wt[None, :, 0, :, None, None, None]
            else:
                r = _einsum(xp, "ngkdhw,gkc->ngcdhw", dyg, wt)
            view += r.reshape(n, p.c, *osz)
        crop = (slice(None), slice(None)) + tuple(slice(q, q + i) for q, i in zip(pads, isz))
        return _from_cf(dxp[crop], p.layouts[0], nd)
    # dw_tap[g, k, c] = sum_{n, o} dy[n, g, k, o] x_tap[n, g, c, o]
    dy, x = _to_cf(a, p.layouts[2]), _to_cf(b, p.layouts[0])
    xpad = _padded(xp, x, widths)
    dw = xp.zeros((p.k, cpg, *fsz))
    dyg = dy.reshape(n, g, kpg, *osz)
    for tap in _taps(fsz):
        patch = xpad[(slice(None), slice(None)) + _tap_slices(osz, tap, strides, dils)]
        r = _einsum(xp, "ngkdhw,ngcdhw->gkc", dyg, patch.reshape(n, g, cpg, *osz))
        dw[:, :, tap[0], tap[1], tap[2]] = r.reshape(p.k, cpg)
    return _from_cf(dw, wl, nd)
