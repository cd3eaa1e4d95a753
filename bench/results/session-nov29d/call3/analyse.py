"""Call 3 (session nov29d)'s same-run side-by-side (samerun/*.json): per set and direction, own best / cuDNN's best plan in the harness
(geomean), how many layers the Hopper family wins among own solvers, and the layers over 1.0. Usage: python analyse.py"""
import gzip
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for f in ("bench_FP16_FBW_NHWC.json", "bench_BF16_FBW_NHWC.json", "bench_FP16_FBW_NHWC_nonresnet.json"):
    d = json.load(gzip.open(HERE / "out" / "samerun" / (f + ".gz")))
    print(f"{f} ({d['elapsed_s']:.0f} s): {d['command']}")
    for dr in "FBW":
        rs = [r for r in d["rows"] if r["direction"] == dr and r.get("ratio_harness")]
        hop = sum("Hopper" in r["best_own"] for r in rs)
        over = [f"{r['shape']} {r['ratio_harness']:.2f} ({r['best_own']})" for r in rs if r["ratio_harness"] > 1.0]
        print(f"  {dr}: own best / cuDNN's best plan {g([r['ratio_harness'] for r in rs]):.3f} over {len(rs)} layers; "
              f"Hopper family best own in {hop}; over 1.0 in {len(over)}: {'; '.join(over)}")
