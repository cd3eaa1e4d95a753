"""CPU emulation of kernels_src/reference_wrw.cu: its loops (the lanes' element decode, the warps' row split, the
[lo, hi] column range) run in Python on small problems per channels-last layout, stride, dilation, padding and group
count, 2D and 3D, against miofind.reference's numpy result. Session nov27i."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.reference import conv_reference  # noqa: E402
from solvers.direct_naive_base import WRW_BLOCK, _size_args  # noqa: E402

WARPS = WRW_BLOCK // 32


def tdiv(a, b):   # C's integer division (toward zero)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def emulate(p, dy, x):
    (N, C, K, G, Di, Hi, Wi, Do, Ho, Wo, Z, Y, X, pd, ph, pw, sd, sh, sw, dd, dh, dw,
     xn, xc, xd, xh, xw, wk, wc, wd, wh, ww, yn, yc, yd, yh, yw) = [int(v) for v in _size_args(p, np.int64)]
    xf, yf = x.reshape(-1), dy.reshape(-1)
    cpg, kpg = C // G, K // G
    total, rows = K * cpg * Z * Y * X, N * Do * Ho
    out = np.full(total, np.nan)
    for e0 in range(0, total, 32):          # one block's turn
        partial = np.zeros((WARPS, 32))
        decoded = {}
        for warp in range(WARPS):
            for lane in range(32):
                e = e0 + lane
                if e >= total:
                    continue
                t = e
                c = t % cpg; t //= cpg; s = t % X; t //= X; r = t % Y; t //= Y; z = t % Z; k = t // Z  # noqa: E702
                decoded[lane] = (c, s, r, z, k)
                off = s * dw - pw
                lo = 0 if off >= 0 else tdiv(sw - 1 - off, sw)
                hi = -1 if Wi - 1 - off < 0 else tdiv(Wi - 1 - off, sw)
                hi = min(hi, Wo - 1)
                xk = ((k // kpg) * cpg + c) * xc
                acc = 0.0
                for row in range(warp, rows, WARPS):
                    u = row
                    oh = u % Ho; u //= Ho; od = u % Do; n = u // Do  # noqa: E702
                    id_, ih = od * sd - pd + z * dd, oh * sh - ph + r * dh
                    if id_ < 0 or id_ >= Di or ih < 0 or ih >= Hi:
                        continue
                    xr, yr = xk + n * xn + id_ * xd + ih * xh, k * yc + n * yn + od * yd + oh * yh
                    for ow in range(lo, hi + 1):
                        iw = ow * sw + off
                        assert 0 <= iw < Wi
                        acc += xf[xr + iw * xw] * yf[yr + ow * yw]
                partial[warp, lane] = acc
        for lane, (c, s, r, z, k) in decoded.items():
            out[k * wk + c * wc + z * wd + r * wh + s * ww] = partial[:, lane].sum()
    return out


rng = np.random.default_rng(0)
cases = [("NHWC", dict(strides=2, pads=1)), ("NHWC", dict(strides=(2, 3), pads=(1, 2), dilations=(1, 2))),
         ("NHWC", dict(strides=1, pads=0, groups=2)), ("NHWC", dict(strides=1, pads=3, groups=6, k=6)),
         ("NHWC", dict(strides=3, pads=0, filter_size=(1, 5))), ("NCHW", dict(strides=2, pads=1)),
         ("NHWC", dict(in_size=(4, 3), dilations=3, pads=3)),   # a tap with no column in range (hi = -1)
         ("NDHWC", dict(strides=2, pads=1, in_size=(5, 6, 7)))]
for lay, kw in cases:
    kw = dict(dict(n=2, c=6, k=4, in_size=(7, 8), filter_size=3), **kw)
    p = ProblemDescription.make("W", layout=lay, **kw)
    a_shape, b_shape, out_shape = p.io_shapes()
    dy, x = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    ref = conv_reference(p, dy, x)
    got = emulate(p, dy, x).reshape(out_shape)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    print(lay, kw, f"{err:.1e}", "OK" if err < 1e-12 else "BAD")
