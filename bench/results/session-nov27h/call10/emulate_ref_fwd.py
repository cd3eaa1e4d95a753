"""CPU emulation of reference_fwd.cu (call10/reference_fwd.patch): its loops, run in Python on a small problem per
layout, stride, dilation and group count, against miofind.reference's numpy result."""
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
    y = np.full(N * K * Do * Ho * Wo, np.nan)
    cpg, kpg = C // G, K // G
    for i in range(N * K * Do * Ho * Wo):
        t = i
        if yc == 1 and K > 1:
            k = t % K; t //= K; ow = t % Wo; t //= Wo; oh = t % Ho; t //= Ho; od = t % Do; n = t // Do  # noqa: E702
        else:
            ow = t % Wo; t //= Wo; oh = t % Ho; t //= Ho; od = t % Do; t //= Do; k = t % K; n = t // K  # noqa: E702
        xn0, wk0 = n * xn + (k // kpg) * cpg * xc, k * wk
        acc = 0.0
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
                    for c in range(cpg):
                        acc += xf[xp + c * xc] * wf[wp + c * wc]
        y[n * yn + k * yc + od * yd + oh * yh + ow * yw] = acc
    return y


rng = np.random.default_rng(0)
for lay in ("NCHW", "NHWC"):
    for kw in (dict(strides=2, pads=1), dict(strides=(2, 1), pads=(1, 2), dilations=(1, 2)),
               dict(strides=1, pads=0, groups=2)):
        p = ProblemDescription.make("F", n=2, c=6, k=4, in_size=(7, 8), filter_size=3, layout=lay, **kw)
        a_shape, b_shape, out_shape = p.io_shapes()
        x, w = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        ref = conv_reference(p, x, w)
        got = emulate(p, x, w).reshape(out_shape)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        print(lay, kw, f"{err:.1e}", "OK" if err < 1e-12 else "BAD")
