"""Runs one Hopper implicit-GEMM solution a few times for a profiler or a sanitizer (``ncu -k igemm_hopper_wrw``):
``python3 bench/hopper_wrw_profile.py [F|B|W] C K H FILTER STRIDE [N] [CONFIG_JSON]`` (backward weights unless a
direction comes first; FP16 NHWC, pad FILTER // 2; the default config unless CONFIG_JSON names one, e.g.
'{"BM": 128, ..., "WSPEC": 1}'). ``--solver ID`` runs another solver of that direction (e.g. ConvCudnnFwd, its
heuristic plan) on the same problem."""

from __future__ import annotations

import json
import sys


def main():
    import cupy

    from miofind.invokers import prepare
    from miofind.problem import ProblemDescription

    args = sys.argv[1:]
    solver = None
    if "--solver" in args:
        i = args.index("--solver")
        solver = args[i + 1]
        del args[i:i + 2]
    d = args.pop(0) if args and args[0] in ("F", "B", "W") else "W"
    c, k, h, f, s = (int(a) for a in args[:5])
    n = int(args[5]) if len(args) > 5 else 32
    p = ProblemDescription.make(d, n=n, c=c, k=k, in_size=(h, h), filter_size=f, pads=f // 2, strides=s,
                                layout="NHWC", dtype="FP16")
    sa, sb, so = p.io_shapes()
    rng = cupy.random.default_rng(0)
    a = rng.uniform(-1, 1, sa, dtype=cupy.float32).astype(cupy.float16)
    b = rng.uniform(-1, 1, sb, dtype=cupy.float32).astype(cupy.float16)
    out = cupy.empty(so, cupy.float16)
    cfg = json.loads(args[6]) if len(args) > 6 else None
    run = prepare(p, solver or {"F": "ConvImplicitGemmHopperFwd", "B": "ConvImplicitGemmHopperBwd", "W": "ConvImplicitGemmHopperWrw"}[d], cfg)
    for _ in range(5):
        run(a, b, out)
    cupy.cuda.get_current_stream().synchronize()
    print(p.key(), "done")


if __name__ == "__main__":
    main()
