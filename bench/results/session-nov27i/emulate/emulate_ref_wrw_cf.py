"""CPU emulation of reference_conv_wrw_cf (kernels_src/reference_wrw.cu, prepared in session nov27i's
prepared/wrw_cf.patch, not applied): a block per dw element, thread t of WRW_BLOCK walking the output pixels
t, t + WRW_BLOCK, ... by adding the stride's (n, od, oh, ow) digits with carries; run in Python on channels-first
problems (strided, dilated, padded, grouped, 2D and 3D, the pixel count above and below WRW_BLOCK, sizes that make
every digit carry) against miofind.reference's numpy result, with each walked pixel checked against the division."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.reference import conv_reference  # noqa: E402
from solvers.direct_naive_base import WRW_BLOCK, _size_args  # noqa: E402


def digits(u, Wo, Ho, Do):
    ow = u % Wo; u //= Wo; oh = u % Ho; u //= Ho; od = u % Do; n = u // Do  # noqa: E702
    return ow, oh, od, n


def emulate(p, dy, x):
    (N, C, K, G, Di, Hi, Wi, Do, Ho, Wo, Z, Y, X, pd, ph, pw, sd, sh, sw, dd, dh, dw,
     xn, xc, xd, xh, xw, wk, wc, wd, wh, ww, yn, yc, yd, yh, yw) = [int(v) for v in _size_args(p, np.int64)]
    xf, yf = x.reshape(-1), dy.reshape(-1)
    cpg, kpg = C // G, K // G
    wtotal, red = K * cpg * Z * Y * X, N * Do * Ho * Wo
    sow, soh, sod, sn = digits(WRW_BLOCK, Wo, Ho, Do)
    out = np.full(wtotal, np.nan)
    for e in range(wtotal):
        t = e
        s = t % X; t //= X; r = t % Y; t //= Y; z = t % Z; t //= Z; c = t % cpg; k = t // cpg  # noqa: E702
        xc0, yk0 = ((k // kpg) * cpg + c) * xc, k * yc
        partial = np.zeros(WRW_BLOCK)
        for tid in range(WRW_BLOCK):
            ow, oh, od, n = digits(tid, Wo, Ho, Do)
            acc = 0.0
            for j in range(tid, red, WRW_BLOCK):
                assert (ow, oh, od, n) == digits(j, Wo, Ho, Do), (j, (ow, oh, od, n))
                id_, ih, iw = od * sd - pd + z * dd, oh * sh - ph + r * dh, ow * sw - pw + s * dw
                if 0 <= id_ < Di and 0 <= ih < Hi and 0 <= iw < Wi:
                    acc += xf[xc0 + n * xn + id_ * xd + ih * xh + iw * xw] * yf[yk0 + n * yn + od * yd + oh * yh + ow * yw]
                ow += sow
                carry = int(ow >= Wo)
                ow -= Wo * carry
                oh += soh + carry
                carry = int(oh >= Ho)
                oh -= Ho * carry
                od += sod + carry
                carry = int(od >= Do)
                od -= Do * carry
                n += sn + carry
            partial[tid] = acc
        out[k * wk + c * wc + z * wd + r * wh + s * ww] = partial.sum()
    return out


rng = np.random.default_rng(0)
cases = [("NCHW", dict(n=5, in_size=(9, 10), pads=1)),                                  # 450 pixels
         ("NCHW", dict(n=7, in_size=(13, 11), strides=(2, 3), pads=(1, 2), dilations=(1, 2))),
         ("NCHW", dict(n=3, in_size=(7, 8), pads=0, groups=2)),                        # under WRW_BLOCK pixels
         ("NCHW", dict(n=40, in_size=(3, 5), filter_size=(1, 3), pads=(0, 1), c=3, k=3)),  # 256 = 17*15 + 1
         ("NCDHW", dict(n=3, in_size=(5, 6, 7), strides=2, pads=1))]
for lay, kw in cases:
    kw = dict(dict(c=4, k=4, filter_size=3), **kw)
    p = ProblemDescription.make("W", layout=lay, **kw)
    a_shape, b_shape, out_shape = p.io_shapes()
    dy, x = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    ref = conv_reference(p, dy, x)
    got = emulate(p, dy, x).reshape(out_shape)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    print(lay, kw, f"{err:.1e}", "OK" if err < 1e-12 else "BAD", flush=True)
