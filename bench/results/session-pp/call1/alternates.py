"""From this call's sweeps (isolated kernel time / cuDNN's best plan, ResNet-50 N=32 FP16 F and B): the geomean of the
best of the find's default and its three alternates, and with each ping-pong config of the sweep added as a fourth,
or in place of one of the three. Needs the repository on the path (the defaults come from the solvers, on the CPU).

    PYTHONPATH=. python bench/results/session-pp/call1/alternates.py > bench/results/session-pp/call1/alternates.txt
"""
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import miofind.solvers.implicit_gemm_hopper_base as hb  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from shapes import _resnet50  # noqa: E402

hb.device_arch = lambda: None
ALTS = [(64, 128, 1, 8, 0), (128, 128, 2, 4, 0), (256, 64, 2, 4, 0)]     # the three before this session
SOLVER = {"F": get_solver("ConvImplicitGemmHopperFwd"), "B": get_solver("ConvImplicitGemmHopperBwd")}
layers = _resnet50(32)


def key(c):
    return c["BM"], c["BN"], c["WGS"], c["STAGES"], c.get("PINGPONG", 0)


res = {}
for d in "FB":
    for row in json.loads((HERE / f"sweep_{d}.json").read_text())["rows"]:
        p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **layers[row["layer"]])
        cb = min(r["isolated_ms"] for r in row["cudnn"])
        t = {}
        for r in row["ours"] + list(row["others"].values())[0]:
            if r["cfg"]["PERSIST"] and r["cfg"]["TMA"]:
                t[key(r["cfg"])] = min(t.get(key(r["cfg"]), 9.0), r["isolated_ms"] / cb)
        res[d, row["layer"]] = t, key(SOLVER[d].default_config(p))


def gm(sel, dirs):
    v = [math.log(min(t[k] for k in sel + [dk] if k in t)) for (d, _), (t, dk) in res.items() if d in dirs]
    return math.exp(sum(v) / len(v))


print("configs (BM, BN, WGS, STAGES, PINGPONG); geomean over 22 layers each of the best of the default and the set")
print(f"default alone: F {gm([], 'F'):.4f}, B {gm([], 'B'):.4f}")
print(f"default + the three alternates: F {gm(ALTS, 'F'):.4f}, B {gm(ALTS, 'B'):.4f}")
for pp in sorted({k for t, _ in res.values() for k in t if k[4]}):
    rep = ", ".join(f"{gm([a for a in ALTS if a != r] + [pp], 'FB'):.4f}" for r in ALTS)
    print(f"+ {pp}: F {gm(ALTS + [pp], 'F'):.4f}, B {gm(ALTS + [pp], 'B'):.4f}; in place of each alternate (F and B): {rep}")

# the default against its ping-pong twin (the same tile, 128 rows a warpgroup where the default has two warpgroups of
# 64, else 64 x BN of two): whether ping-pong should be the default
for d in "FB":
    a, b = [], []
    for (dd, _), (t, dk) in res.items():
        twin = (dk[0] if dk[2] == 2 else 64, dk[1], 2, dk[3], 1)
        if dd == d and dk in t and twin in t:
            a.append(math.log(t[dk]))
            b.append(math.log(t[twin]))
    print(f"{d}: the default {math.exp(sum(a) / len(a)):.3f}, its ping-pong twin {math.exp(sum(b) / len(b)):.3f} "
          f"({len(a)} layers)")
