"""Session nov30g: the Hopper W solver's tuned time per ResNet-50 W layer by the tune's patience, from three tunes'
JSON (session nov30f call 7: 48 configs, 6 s, patience 8; nov30g call 3: 96 configs, 14 s, patience 24; nov30g call 8:
a re-tune from call 3's DB, 400 configs, 15 s, patience 100). Each time is that tune's own final re-measure.

    python bench/results/session-nov30g/patience.py > bench/results/session-nov30g/patience.txt
"""
import gzip
import json
import math
from pathlib import Path

R = Path(__file__).resolve().parents[1]


def get(d):
    out = {}
    for o in d["outcomes"]:
        for s in o["solvers"]:
            if s["solver_id"] == "ConvImplicitGemmHopperWrw" and s.get("time_ms"):
                out[o["key"]] = (s["time_ms"] * 1e3, s.get("tried"), s.get("seconds") or 0)
    return out


A = get(json.load(gzip.open(R / "session-nov30f/call7/tune_guided.json.gz")))
B = get(json.load(open(R / "session-nov30g/call3/tune_long.json")))
C = get(json.load(open(R / "session-nov30g/call8/tune_wide.json")))
print("Hopper W tuned time per ResNet-50 W layer (FP16 NHWC, N=32, one H200 each; each tune's own final re-measure), "
      "us")
print("nov30f call 7: 48 configs, 6 s, patience 8 | nov30g call 3: 96 configs, 14 s, patience 24 | "
      "nov30g call 8: re-tune from call 3, 400 configs, 15 s, patience 100")
print(f"{'problem':42s} {'p8':>14s} {'p24':>14s} {'p100':>14s}")
r1, r2 = [], []
for k, z in C.items():
    x, y = A.get(k), B.get(k)

    def f(v):
        return f"{v[0]:6.1f} ({v[1]:3d})" if v else "     -       "
    print(f"{k[:42]:42s} {f(x):>14s} {f(y):>14s} {f(z):>14s}")
    if x:
        r1.append(z[0] / x[0])
    if y:
        r2.append(z[0] / y[0])


def g(v):
    return math.exp(sum(map(math.log, v)) / len(v))


print(f"geomean tuned time, patience 100 / patience 8: {g(r1):.3f} over {len(r1)}; / patience 24: {g(r2):.3f} "
      f"over {len(r2)}")
secs = [sum(v[2] for v in d.values()) for d in (A, B, C)]
print(f"tune seconds for the solver: p8 {secs[0]:.0f} s, p24 {secs[1]:.0f} s, p100 {secs[2]:.0f} s")
