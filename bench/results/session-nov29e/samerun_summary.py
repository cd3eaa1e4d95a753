"""Session nov29e: the same-run side-by-side files of calls 1-8 (bench_convs --cudnn-harness, F only): own best / cuDNN's
best plan in our harness, geomean over the layers, with and without ConvImplicitGemmHopperFwdTmaStore (every solver is
measured in each run, so "without" is the same run's figure had the solver not existed), and in how many layers it is
the own best. Usage: python samerun_summary.py > samerun_summary.txt"""
import glob
import gzip
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TS = "ConvImplicitGemmHopperFwdTmaStore"
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
for f in sorted(glob.glob(os.path.join(HERE, "call*", "out", "samerun*", "bench_*_F_NHWC*.json.gz"))):
    d = json.load(gzip.open(f))
    rows = [r for r in d["rows"] if r.get("ratio_harness")]
    with_ts, without, wins = [], [], 0
    for r in rows:
        own = {s: t for s, t in r["solvers_ms"].items() if t and not s.startswith(("ConvCudnn", "ConvDirectNaive"))}
        cud = r["cudnn_harness_ms"]
        with_ts.append(r["ratio_harness"])
        rest = [t for s, t in own.items() if s != TS]
        without.append(min(rest) / cud if rest else math.inf)
        wins += r["best_own"] == TS
    print(f"{os.path.relpath(f, HERE)}: {d['command']}")
    print(f"  {len(rows)} layers: own best / cuDNN's best plan {g(with_ts):.4f}, without {TS} {g(without):.4f}; "
          f"it is the own best in {wins}")
