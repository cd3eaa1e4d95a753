"""The shifted-window Hopper forward (ConvImplicitGemmHopperWindowFwd) against the per-tap Hopper forward
(ConvImplicitGemmHopperFwd) and cuDNN's best plan, FP16 NHWC, on the same buffers in one run:
``python3 bench/bench_window.py [--verify-only] [--json FILE]``.

First every window config of a set of small odd problems (tails in M, N, pads 0-2, 1x7/7x1/5x5, C = 128,
BF16) is checked against the float64 reference with a NaN-poisoned output. Then the large layer
(-n 120 -c 64 -H 512 -W 512 -k 64 3x3) and a few early-network layers are timed (CUDA events, 3 warm-ups,
median of 20): every window config, the per-tap forward's default and persistent configs, and cuDNN's plan
picked by a benchmark find. TFLOP/s counts the convolution's true FLOPs (the window kernel also computes
the padding rows it drops)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

SMALL = {
    "tail_3x3": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "pad0_3x3": dict(n=3, c=64, k=64, in_size=(9, 11), filter_size=3, pads=0),
    "pad2_5x5": dict(n=2, c=64, k=40, in_size=(12, 10), filter_size=5, pads=2),
    "1x7": dict(n=2, c=64, k=136, in_size=(9, 17), filter_size=(1, 7), pads=(0, 3)),
    "7x1": dict(n=2, c=64, k=64, in_size=(17, 9), filter_size=(7, 1), pads=(3, 0)),
    "c128": dict(n=2, c=128, k=200, in_size=(14, 14), filter_size=3, pads=1),
    "1x1": dict(n=4, c=64, k=256, in_size=(14, 14), filter_size=1),
    "r50_64_56": dict(n=4, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1),
}
TIMED = {
    "large 64->64 @512 3x3 n120": dict(n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1),
    "r50 64->64 @56 3x3 n32": dict(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1),
    "vgg 64->64 @224 3x3 n32": dict(n=32, c=64, k=64, in_size=(224, 224), filter_size=3, pads=1),
    "vgg 64->128 @112 3x3 n32": dict(n=32, c=64, k=128, in_size=(112, 112), filter_size=3, pads=1),
    "vgg 128->128 @112 3x3 n32": dict(n=32, c=128, k=128, in_size=(112, 112), filter_size=3, pads=1),
    "inc 64->96 @35 3x3 n32": dict(n=32, c=64, k=96, in_size=(35, 35), filter_size=3, pads=1),
}
HOPPER_ALTS = ({"BM": 128, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1},
               {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 6, "PERSIST": 1, "SPLITK": 1},
               {"BM": 256, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 0, "SPLITK": 1},
               {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 0, "SPLITK": 1})


def timed(fn, iters=20, warm=3):
    import cupy
    for _ in range(warm):
        fn()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(iters):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(s, e))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    import cupy

    from miofind.api import find_solutions
    from miofind.invokers import build_invoker, call, prepare
    from miofind.problem import ProblemDescription
    from miofind.reference import conv_reference
    from miofind.solvers import implicit_gemm_hopper_window_fwd as wmod
    from miofind.verify import poison, random_array, rel_error, to_float64, tolerance

    ap = argparse.ArgumentParser()
    ap.add_argument("--verify-only", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    win = wmod.ImplicitGemmHopperWindowFwd()
    out = {"verify": [], "timed": []}

    def run_win(p, cfg):
        sol = win.get_solution(p, cfg)
        inv = build_invoker(p, sol)
        return lambda a, b, o: call(inv, p, a, b, o, 0)

    worst = 0.0
    for name, kw in SMALL.items():
        for dt in ("FP16", "BF16"):
            p = ProblemDescription.make("F", layout="NHWC", dtype=dt, **kw)
            if not win.applicability(p):
                print(f"{name} {dt}: not applicable: {win.applicability(p).reason}")
                continue
            rng = cupy.random.default_rng(7)
            sa, sb, so = p.io_shapes()
            a, b = random_array(sa, dt, rng), random_array(sb, dt, rng)
            ref = cupy.asarray(conv_reference(p, cupy.asnumpy(to_float64(a, dt)), cupy.asnumpy(to_float64(b, dt))))
            tol = tolerance(dt, win.family, "F", "strict")
            for cfg in win.config_space(p):
                o = cupy.empty(so, dtype=a.dtype)
                poison(o, dt)
                run_win(p, cfg)(a, b, o)
                cupy.cuda.get_current_stream().synchronize()
                err = float(rel_error(to_float64(o, dt), ref))
                err = err if math.isfinite(err) else float("inf")
                worst = max(worst, err / tol)
                out["verify"].append({"case": name, "dtype": dt, "config": cfg, "err": err, "tol": tol})
                if not err <= tol:
                    print(f"FAIL {name} {dt} {cfg}: err {err:.3g} > {tol:.1g}", flush=True)
    print(f"verify: {len(out['verify'])} (case, dtype, config) runs, worst err/tol {worst:.3g}", flush=True)
    if args.verify_only or worst > 1:
        if args.json:
            json.dump(out, open(args.json, "w"), indent=1)
        return
    for name, kw in TIMED.items():
        p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **kw)
        flop = p.flops()
        rng = cupy.random.default_rng(1)
        sa, sb, so = p.io_shapes()
        x = rng.uniform(-1, 1, sa, dtype=cupy.float32).astype(cupy.float16)
        w = rng.uniform(-1, 1, sb, dtype=cupy.float32).astype(cupy.float16)
        y_ref, y = cupy.empty(so, cupy.float16), cupy.empty(so, cupy.float16)
        row = {"layer": name, "key": p.key(), "tflop": flop / 1e12}
        res = find_solutions(p, solvers=["ConvCudnnFwd"], mode="benchmark", store=False, verify=False)
        plan = res[0].config if res else None
        pc = prepare(p, "ConvCudnnFwd", plan)
        row["cudnn_ms"] = timed(lambda: pc(x, w, y_ref))
        hop = []
        for cfg in (None, *HOPPER_ALTS):
            try:
                ph = prepare(p, "ConvImplicitGemmHopperFwd", cfg)
            except ValueError:
                continue
            hop.append({"config": cfg, "ms": timed(lambda: ph(x, w, y))})
        row["hopper"] = hop
        wins = []
        for cfg in win.config_space(p):
            f = run_win(p, cfg)
            y.fill(cupy.nan)
            f(x, w, y)
            err = float(rel_error(y.astype(cupy.float64), y_ref.astype(cupy.float64)))
            wins.append({"config": cfg, "ms": timed(lambda: f(x, w, y)), "err_vs_cudnn": err})
        row["window"] = wins
        out["timed"].append(row)
        bh = min(h["ms"] for h in hop)
        bw = min(v["ms"] for v in wins)
        cfgw = min(wins, key=lambda v: v["ms"])
        print(f"{name:28s} cuDNN {row['cudnn_ms']:8.3f} ms ({flop / row['cudnn_ms'] / 1e9:5.0f} TFLOP/s)  "
              f"Hopper best {bh:8.3f} ({flop / bh / 1e9:5.0f})  window best {bw:8.3f} ({flop / bw / 1e9:5.0f}) "
              f"{cfgw['config']} err {cfgw['err_vs_cudnn']:.1e}  window/cuDNN {bw / row['cudnn_ms']:.3f}", flush=True)
        del x, w, y, y_ref
        cupy.get_default_memory_pool().free_all_blocks()
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
