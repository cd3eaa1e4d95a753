"""Per-layer isolated kernel time of bench_kernel_time's JSON (ours = cp.async configs, tma, ptma = persistent copy
engine, cudnn; best / cudnn and the best config): python per_layer.py kt_r50.json [more.json ...]"""
import json, math, sys

for path in sys.argv[1:]:
    rows = json.load(open(path))["rows"]
    print(f"== {path}: isolated us per layer")
    for dt in sorted({r["dtype"] for r in rows}):
        logs = []
        for r in (r for r in rows if r["dtype"] == dt):
            t = {s: r.get(f"{s}_isolated_ms") for s in ("ours", "tma", "ptma", "cudnn")}
            own = [(v, s) for s, v in t.items() if s != "cudnn" and v]
            if not own or not t["cudnn"]:
                continue
            best, side = min(own)
            c = r[f"{side}_isolated_cfg"]
            logs.append(math.log(best / t["cudnn"]))
            f = lambda v: f"{v * 1e3:7.1f}" if v else "      -"
            print(f"{r['layer']:28s} {r['direction']} {dt} ours {f(t['ours'])} tma {f(t['tma'])} ptma {f(t['ptma'])} "
                  f"cudnn {f(t['cudnn'])}  best/cudnn {best / t['cudnn']:.3f}  "
                  f"{c['BM']}x{c['BN']}/{c['WGS']}/s{c['STAGES']}/p{c['PERSIST']}t{c['TMA']}k{c['SPLITK']}")
        print(f"geomean best/cudnn {dt}: {math.exp(sum(logs) / len(logs)):.3f} ({len(logs)} layers)")
