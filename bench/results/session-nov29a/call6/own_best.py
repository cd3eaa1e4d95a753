"""Own best against cuDNN's best TF32 plan (isolated time, geomean) from a sweep_configs.py JSON whose --others list the
new solver and the older own W solvers: before (the older ones), the new solver at a find's configs, and the fastest of
all. Usage: python own_best.py SWEEP.json [...]"""
import json
import math
import sys

NEW = "ConvImplicitGemmHopperWrwTf32Rn"
M = "isolated_ms"


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v))


for f in sys.argv[1:]:
    rows = [r for r in json.load(open(f))["rows"] if r["cudnn"]]
    before, new, now = [], [], []
    for r in rows:
        cb = min(x[M] for x in r["cudnn"])
        old = [x[M] for k, v in r["others"].items() if k != NEW for x in v]
        n = [x[M] for x in r["others"].get(NEW, [])]
        before.append(min(old) / cb)
        new.append(min(n) / cb)
        now.append(min(old + n) / cb)
    print(f"{f}: {len(rows)} layers; own best before {gm(before):.3f}, the new solver at a find's configs {gm(new):.3f}, "
          f"own best now {gm(now):.3f}")
