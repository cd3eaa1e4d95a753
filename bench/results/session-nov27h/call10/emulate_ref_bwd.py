"""CPU emulation of kernels_src/reference_bwd.cu (with nhwc_decode.patch's decode) against miofind.reference."""
import sys
import numpy as np
sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__file__), '..', '..', '..', '..'))
from miofind.problem import ProblemDescription
from miofind.reference import conv_reference
from solvers.direct_naive_base import _size_args

def emulate(p, dy, w, nhwc_decode):
    (N, C, K, G, Di, Hi, Wi, Do, Ho, Wo, Z, Y, X, pd, ph, pw, sd, sh, sw, dd, dh, dw,
     xn, xc, xd, xh, xw, wk, wc, wd, wh, ww, yn, yc, yd, yh, yw) = [int(v) for v in _size_args(p, np.int64)]
    dyf, wf = dy.reshape(-1), w.reshape(-1)
    dx = np.full(N * C * Di * Hi * Wi, np.nan)
    cpg, kpg = C // G, K // G
    for i in range(N * C * Di * Hi * Wi):
        t = i
        if nhwc_decode and xc == 1 and C > 1:
            c = t % C; t //= C; iw = t % Wi; t //= Wi; ih = t % Hi; t //= Hi; id_ = t % Di; n = t // Di
        else:
            iw = t % Wi; t //= Wi; ih = t % Hi; t //= Hi; id_ = t % Di; t //= Di; c = t % C; n = t // C
        k0, cg = (c // cpg) * kpg, c % cpg
        acc = 0.0
        for z in range(Z):
            td = id_ + pd - z * dd
            if td < 0 or td % sd: continue
            od = td // sd
            if od >= Do: continue
            for r in range(Y):
                th = ih + ph - r * dh
                if th < 0 or th % sh: continue
                oh = th // sh
                if oh >= Ho: continue
                for s in range(X):
                    tw = iw + pw - s * dw
                    if tw < 0 or tw % sw: continue
                    ow = tw // sw
                    if ow >= Wo: continue
                    for kk in range(kpg):
                        acc += dyf[n*yn + (k0+kk)*yc + od*yd + oh*yh + ow*yw] * wf[(k0+kk)*wk + cg*wc + z*wd + r*wh + s*ww]
        dx[n*xn + c*xc + id_*xd + ih*xh + iw*xw] = acc
    return dx

rng = np.random.default_rng(0)
for lay in ("NCHW", "NHWC"):
    for kw in (dict(strides=2, pads=1), dict(strides=(2, 1), pads=(1, 2), dilations=(1, 2)), dict(strides=1, pads=0, groups=2)):
        p = ProblemDescription.make("B", n=2, c=6, k=4, in_size=(7, 8), filter_size=3, layout=lay, **kw)
        a_shape, b_shape, out_shape = p.io_shapes()
        dy, w = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        ref = conv_reference(p, dy, w)
        for dec in (False, True):
            got = emulate(p, dy, w, dec).reshape(out_shape)
            err = np.abs(got - ref).max() / np.abs(ref).max()
            print(lay, kw, "nhwc_decode" if dec else "plain", f"{err:.1e}", "OK" if err < 1e-12 else "BAD")
