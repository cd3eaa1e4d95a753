"""Best timed config / cuDNN's best plan from this folder's bench_hopper_igemm.py JSON, among WSPEC 0 configs only,
WSPEC <= 1 and WSPEC <= 2: python3 bench/results/session-fwdspec/two-producers-tried/summary.py"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
print("best timed config / cuDNN's best plan, geomean: WSPEC 0 only, WSPEC <= 1, WSPEC <= 2 (two producer warpgroups), one run")
for f in ("bench_resnet.json", "bench_nonresnet.json"):
    d = json.load(open(os.path.join(HERE, f)))
    for D in "FB":
        L, n, w2 = {0: [], 1: [], 2: []}, 0, 0
        for r in d["rows"]:
            if r["dir"] != D or "hopper_all" not in r or "cudnn_ms" not in r:
                continue
            a = r["hopper_all"]
            b = [min(x["ms"] for x in a if x["config"].get("WSPEC", 0) <= k) for k in (0, 1, 2)]
            if "large" in r["layer"]:
                print(f"{f} {r['layer']}: cuDNN {r['cudnn_ms']:.3f} ms; best {b[0]:.3f} / {b[1]:.3f} / {b[2]:.3f} ms "
                      f"({r['tflop'] / b[2] * 1e3:.0f} TFLOP/s)")
                continue
            for k in L:
                L[k].append(math.log(b[k] / r["cudnn_ms"]))
            n += 1
            w2 += b[2] < b[1]
        print(f"{f} {D}: {n} layers, geomean {' / '.join(f'{math.exp(sum(L[k]) / n):.3f}' for k in L)}; "
              f"two producers best on {w2}")
