"""Per layer, the best timed Hopper config without WSPEC and the best of all, over cuDNN's time, from
bench_hopper_igemm.py's JSON files in this folder: python3 bench/results/session-fwdspec/wspec_vs_plain.py"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
print("best timed config / cuDNN's best plan, without WSPEC and with it among the configs (one run per file)")
for f in ("first/bench_resnet.json", "nonresnet/bench_nonresnet.json"):
    d = json.load(open(os.path.join(HERE, f)))
    for D in "FB":
        l0, l1, wins, n = [], [], 0, 0
        for r in d["rows"]:
            if r["dir"] != D or "hopper_all" not in r or "cudnn_ms" not in r:
                continue
            a = r["hopper_all"]
            b0 = min(x["ms"] for x in a if not x["config"].get("WSPEC", 0))
            b1 = min(x["ms"] for x in a)
            if "large" in r["layer"]:
                print(f"  {f} {r['layer']}: cuDNN {r['cudnn_ms']:.3f} ms, best without {b0:.3f} ms "
                      f"({r['tflop'] / b0 * 1e3:.0f} TFLOP/s), with {b1:.3f} ms ({r['tflop'] / b1 * 1e3:.0f} TFLOP/s)")
                continue
            l0.append(math.log(b0 / r["cudnn_ms"]))
            l1.append(math.log(b1 / r["cudnn_ms"]))
            n += 1
            wins += b1 < b0
            if f.startswith("nonresnet"):
                print(f"  {D} {r['layer']:34s} {b0 / r['cudnn_ms']:.3f} -> {b1 / r['cudnn_ms']:.3f}  "
                      f"({r['tflop'] / b1 * 1e3:.0f} TFLOP/s; cuDNN {r['tflop'] / r['cudnn_ms'] * 1e3:.0f})")
        print(f"{f} {D}: {n} layers, geomean without WSPEC {math.exp(sum(l0) / n):.3f}, "
              f"with {math.exp(sum(l1) / n):.3f}; WSPEC best on {wins}")
