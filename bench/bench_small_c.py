"""The small-C implicit GEMM (ConvImplicitGemmSmallCFwd / Wrw) on the first layers of real CNNs, against cuDNN's
plans and our other solvers, timed on one Harness per problem (same buffers; every candidate verified against the
float64 reference first; a failed build, launch or verification scores as infinite time).

Layers (NHWC, FP16/BF16): ResNet-50's 7x7/2 stem (3 -> 64 @224), MobileNetV2's 3x3/2 (3 -> 32 @224), Inception-v3's
3x3/2 unpadded (3 -> 32 @299), VGG-16's 3x3 (3 -> 64 @224) and U-Net's 3x3 (3 -> 64 @256). Sides per problem:
  small_c  the small-C solver: its default config, with ``--space`` every config of its space, with
           ``--find-configs`` a find's configs, each also with its STORE16 tunable flipped (the forward's);
  others   our other solvers of the direction (their find configs), the fastest;
  cudnn    every plan cuDNN's heuristics offer (up to MIOFIND_CUDNN_PLANS), the fastest.
Timing: "isolated" (one call in a CUDA graph, replayed with a synchronisation each time, median; bench/kernel_timing.py)
and "find" (the Harness's own timing, what a find records). Also the roofline time max(flops / 667 TFLOP/s, bytes /
3.0 TB/s) with bytes = x + w + y once each.

    python bench/bench_small_c.py --n 32,1 --dtypes FP16,BF16 --dirs F,W [--space] --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import kernel_timing  # noqa: E402

LAYERS = {
    "resnet50_7x7s2": dict(c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2),
    "mobilenetv2_3x3s2": dict(c=3, k=32, in_size=(224, 224), filter_size=3, pads=1, strides=2),
    "inception3_3x3s2": dict(c=3, k=32, in_size=(299, 299), filter_size=3, pads=0, strides=2),
    "vgg16_3x3": dict(c=3, k=64, in_size=(224, 224), filter_size=3, pads=1),
    "unet_3x3": dict(c=3, k=64, in_size=(256, 256), filter_size=3, pads=1),
}
SMALL_C = {"F": "ConvImplicitGemmSmallCFwd", "W": "ConvImplicitGemmSmallCWrw"}
CUDNN = {"F": "ConvCudnnFwd", "B": "ConvCudnnBwd", "W": "ConvCudnnWrw"}
MODES = ("isolated", "find")


def roofline_ms(p) -> float:
    nbytes = 2 * (math.prod(p.x_shape) + math.prod(p.w_shape) + math.prod(p.y_shape))
    return max(p.flops() / 667e12, nbytes / 3.0e12) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="32,1")
    ap.add_argument("--dtypes", default="FP16,BF16")
    ap.add_argument("--dirs", default="F,W")
    ap.add_argument("--layers", default=",".join(LAYERS))
    ap.add_argument("--space", action="store_true", help="every config of the small-C solver's space")
    ap.add_argument("--find-configs", action="store_true",
                    help="the small-C solver's find configs, each also with its STORE16 tunable flipped")
    ap.add_argument("--no-others", action="store_true", help="skip our other solvers")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--deadline", type=float, default=1e9)
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver, solvers

    t_start = time.time()
    dev = current_device()
    rows = []
    for n in (int(v) for v in a.n.split(",")):
        for d in a.dirs.split(","):
            for dt in a.dtypes.split(","):
                for name in a.layers.split(","):
                    if time.time() - t_start > a.deadline:
                        print(f"deadline: stopped before {name} N={n} {d} {dt}", flush=True)
                        break
                    p = ProblemDescription.make(d, n=n, layout="NHWC", dtype=dt, **LAYERS[name])
                    sc = get_solver(SMALL_C[d])
                    h = Harness(p, verify=True, seed=0)
                    timings = lambda call, inv, ws, h=h: {  # noqa: E731
                        "isolated": kernel_timing.isolated_ms(call, a.iters),
                        "find": h.time(inv, ws, warmup=3, iters=a.iters)[0]}
                    row = {"layer": name, "n": n, "direction": d, "dtype": dt, "key": p.key(),
                           "roofline_ms": roofline_ms(p)}
                    others = [s for s in solvers() if d in s.directions and s.id not in (SMALL_C[d], CUDNN[d])
                              and not s.is_reference and s.applicability(p)] if not a.no_others else []
                    if a.space:
                        sc_cfgs = list(sc.config_space(p))
                    elif a.find_configs:
                        sc_cfgs = []
                        for c in [sc.default_config(p)] + [c for c in sc.find_configs(p) if c]:
                            for v in (c, *((dict(c, STORE16=1 - c["STORE16"]),) if "STORE16" in c else ())):
                                if v not in sc_cfgs and sc.is_valid_config(p, v):
                                    sc_cfgs.append(v)
                    else:
                        sc_cfgs = [sc.default_config(p)]
                    sides = [("small_c", sc, sc_cfgs, sc.family)]
                    sides += [("others", s, None, s.family) for s in others]
                    sides.append(("cudnn", get_solver(CUDNN[d]), None, "cudnn"))
                    for side, solver, cfgs, fam in sides:
                        for cfg, t in kernel_timing.timed_configs(h, p, solver, cfgs, fam, timings):
                            if side == "small_c":
                                row.setdefault("small_c_configs", []).append({"config": cfg, **t})
                            for m in MODES:
                                if f"{side}_{m}_ms" not in row or t[m] < row[f"{side}_{m}_ms"]:
                                    row[f"{side}_{m}_ms"] = t[m]
                                    row[f"{side}_{m}_by"] = solver.id if side != "small_c" else cfg
                    if "small_c_configs" in row:
                        row["small_c_default_isolated_ms"] = row["small_c_configs"][0]["isolated"]
                    rows.append(row)
                    g = lambda k: f"{row[k] * 1e3:8.1f}" if k in row else "       -"  # noqa: E731
                    print(f"{name:18s} N={n:<2d} {d} {dt}  isolated small_c {g('small_c_isolated_ms')} "
                          f"(default {g('small_c_default_isolated_ms')})  others {g('others_isolated_ms')} "
                          f"[{row.get('others_isolated_by', '-')}]  cudnn {g('cudnn_isolated_ms')}  roofline "
                          f"{g('roofline_ms')} us", flush=True)
                    del h
                    if a.json:
                        Path(a.json).write_text(json.dumps({"rows": rows, "device": dev.name}, indent=1))

    print("\nper direction, data type and batch: geomean of small_c / cudnn and small_c / others (isolated, find)")
    for d in a.dirs.split(","):
        for dt in a.dtypes.split(","):
            for n in (int(v) for v in a.n.split(",")):
                sel = [r for r in rows if r["direction"] == d and r["dtype"] == dt and r["n"] == n]
                out = [f"{d} {dt} N={n}:"]
                for den in ("cudnn", "others"):
                    for m in MODES:
                        v = [math.log(r[f"small_c_{m}_ms"] / r[f"{den}_{m}_ms"]) for r in sel
                             if f"small_c_{m}_ms" in r and f"{den}_{m}_ms" in r]
                        out.append(f"/{den} {m} {math.exp(sum(v) / len(v)):.3f} ({len(v)})" if v else f"/{den} {m} -")
                print("  ".join(out))


if __name__ == "__main__":
    main()
