"""NCHW ResNet-50 N=32 TF32 W (call 4's sweep): own best against cuDNN's best NCHW TF32 plan (isolated time, geomean
over the 10 layers the wrapper takes), before (the Ampere implicit GEMM and the GEMM solver) and with the new wrapper.
Usage: python nchw_before_after.py r/sweep_r50_nchw.json"""
import json
import math
import sys

rows = json.load(open(sys.argv[1]))["rows"]
M = "isolated_ms"


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v))


before, after, wr = [], [], []
for r in rows:
    if not r["cudnn"]:
        continue
    cb = min(x[M] for x in r["cudnn"])
    o = r["others"]
    old = [x[M] for k in ("ConvImplicitGemmWrw", "GemmWrwUniversal") for x in o.get(k, [])]
    new = [x[M] for x in o.get("ConvImplicitGemmHopperWrwTf32RnNchw", [])]
    before.append(min(old) / cb)
    after.append(min(old + new) / cb)
    wr.append(min(new) / cb)
    print(f"{r['layer']:<26} before {before[-1]:.3f}  wrapper {wr[-1]:.3f}  with it {after[-1]:.3f}")
print(f"NCHW r50 W TF32 ({len(before)} layers): own best before {gm(before):.3f}, with the wrapper {gm(after):.3f}, "
      f"the wrapper's find configs alone {gm(wr):.3f}")
