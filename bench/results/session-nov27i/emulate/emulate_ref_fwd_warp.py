"""CPU emulation of reference_conv_fwd_warp (kernels_src/reference_fwd.cu): a warp per y element in y's memory order,
its 32 lanes splitting the group's channels, the lanes' sums added as the shuffle tree adds them; run in Python on
small channels-last problems (strided, dilated, grouped, 2D and 3D, channel counts 32 does not divide) against
miofind.reference's numpy result. Session nov27i."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.reference import conv_reference  # noqa: E402
from solvers.direct_naive_base import _size_args  # noqa: E402


def emulate(p, x, w):
    (N, C, K, G, Di, Hi, Wi, Do, Ho, Wo, Z, Y, X, pd, ph, pw, sd, sh, sw, dd, dh, dw,
     xn, xc, xd, xh, xw, wk, wc, wd, wh, ww, yn, yc, yd, yh, yw) = [int(v) for v in _size_args(p, np.int64)]
    xf, wf = x.reshape(-1), w.reshape(-1)
    total = N * K * Do * Ho * Wo
    y = np.full(total, np.nan)
    cpg, kpg = C // G, K // G
    for i in range(total):
        t = i
        k = t % K; t //= K; ow = t % Wo; t //= Wo; oh = t % Ho; t //= Ho; od = t % Do; n = t // Do  # noqa: E702
        xn0, wk0 = n * xn + (k // kpg) * cpg * xc, k * wk
        acc = np.zeros(32)
        for z in range(Z):
            id_ = od * sd - pd + z * dd
            if id_ < 0 or id_ >= Di:
                continue
            for r in range(Y):
                ih = oh * sh - ph + r * dh
                if ih < 0 or ih >= Hi:
                    continue
                for s in range(X):
                    iw = ow * sw - pw + s * dw
                    if iw < 0 or iw >= Wi:
                        continue
                    xp, wp = xn0 + id_ * xd + ih * xh + iw * xw, wk0 + z * wd + r * wh + s * ww
                    for lane in range(32):
                        for c in range(lane, cpg, 32):
                            acc[lane] += xf[xp + c * xc] * wf[wp + c * wc]
        off = 16
        while off:   # __shfl_down_sync: lane l adds lane l + off
            acc[:off] += acc[off:2 * off]
            off //= 2
        y[n * yn + k * yc + od * yd + oh * yh + ow * yw] = acc[0]
    return y


rng = np.random.default_rng(0)
cases = [("NHWC", dict(c=40, k=5, strides=2, pads=1)), ("NHWC", dict(c=96, k=6, strides=(2, 1), pads=(1, 2),
                                                                        dilations=(1, 2), groups=2)),
         ("NHWC", dict(c=32, k=3, pads=0)), ("NDHWC", dict(c=33, k=3, in_size=(4, 5, 6), pads=1, strides=2))]
for lay, kw in cases:
    kw = dict(dict(n=2, in_size=(7, 8), filter_size=3), **kw)
    p = ProblemDescription.make("F", layout=lay, **kw)
    a_shape, b_shape, out_shape = p.io_shapes()
    x, w = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    ref = conv_reference(p, x, w)
    got = emulate(p, x, w).reshape(out_shape)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    print(lay, kw, f"{err:.1e}", "OK" if err < 1e-12 else "BAD")
