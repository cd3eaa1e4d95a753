"""The Hopper B solver's record over the Hopper F solver's on the same key (the same GEMM: B's forward view of a
stride-1 problem has the key of the F problem), FP16 NHWC N=32 stride-1 problems of a FindDB file, with cuDNN's B.

    python bench/results/session-inplace/hb_vs_hf.py DB.sqlite
"""
import math
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)


def rec(key, sol):
    return db.execute("select time_ms, config from find_records where problem_key=? and solver_id=?", (key, sol)).fetchone()


ratios = []
for (k,) in db.execute("select distinct problem_key from find_records where problem_key like '%-32-%' and "
                       "problem_key like '%-NHWC-NHWC-NHWC-FP16-B' and solver_id='ConvImplicitGemmHopperBwd'"):
    if k.split("-")[9] != "1x1":          # strides
        continue
    hb, hf, cb = rec(k, "ConvImplicitGemmHopperBwd"), rec(k[:-1] + "F", "ConvImplicitGemmHopperFwd"), rec(k, "ConvCudnnBwd")
    if not hf:
        continue
    ratios.append(hb[0] / hf[0])
    print(f"{k[:44]:44s} HopperB {hb[0] * 1e3:7.1f} us  HopperF {hf[0] * 1e3:7.1f} us  cuDNN B {cb[0] * 1e3 if cb else 0:7.1f} us  "
          f"B config {hb[1]}  F config {hf[1]}")
print(f"geomean HopperB / HopperF over {len(ratios)} problems: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")
