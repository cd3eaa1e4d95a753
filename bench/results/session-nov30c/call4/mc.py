"""Session nov30c call 4: the forward's multicast twins (PERSIST = 3) on ResNet-50's 22 Hopper layers, isolated kernel
time (the median of three interleaved passes) against cuDNN's best plan: the forward's find configs without / with
them, the best PERSIST = 3 config at 4, 6 or 8 stages, the copy-engine store's find configs, and the best own of the
two forwards without / with the twins. Also each twin against its PERSIST = 1 config.
Usage: python mc.py [sweep json, relative to this folder]"""
import gzip
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
cols = {k: [] for k in ("find before", "find with twins", "best P3", "store", "both before", "both after")}
pairs = []
for row in json.load(gzip.open(HERE / (sys.argv[1] if len(sys.argv) > 1 else "sweep_resnet50.json.gz")))["rows"]:
    cud = min(r["isolated_ms"] for r in row["cudnn"])
    fnd = row["others"]["ConvImplicitGemmHopperFwd"]
    st = row["others"]["ConvImplicitGemmHopperFwdTmaStore"]
    mn = lambda rs: min((r["isolated_ms"] for r in rs), default=math.inf)  # noqa: E731
    before = mn([r for r in fnd if r["cfg"]["PERSIST"] != 3])
    vals = [before, mn(fnd), mn(row["ours"]), mn(st), min(before, mn(st)), min(mn(fnd), mn(st))]
    vals = [v / cud for v in vals]
    for k, v in zip(cols, vals):
        cols[k].append(v)
    by = {json.dumps(r["cfg"], sort_keys=True): r["isolated_ms"] for r in fnd}
    tw = [r["isolated_ms"] / by[json.dumps(dict(r["cfg"], PERSIST=1), sort_keys=True)] for r in fnd
          if r["cfg"]["PERSIST"] == 3 and json.dumps(dict(r["cfg"], PERSIST=1), sort_keys=True) in by]
    pairs += tw
    print(f"{row['layer']:24s} cuDNN {cud * 1e3:5.1f} us  " + "  ".join(f"{v:.3f}" for v in vals)
          + (f"   twin / P1 median {statistics.median(tw):.3f}" if tw else ""))
print("geomean " + "  ".join(f"{k} {gm(v):.3f}" for k, v in cols.items()))
print(f"twin / its PERSIST = 1 config: median {statistics.median(pairs):.3f}, range {min(pairs):.3f}-{max(pairs):.3f} "
      f"({len(pairs)} pairs)")
