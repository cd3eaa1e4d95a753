"""The immediate pick of each A/B arm: per row, the best solver and its time (median over rounds) of each variant, and
the geometric mean over rows of variant B's best time over variant A's. Usage: ab_best.py DIR A B"""
import glob
import json
import statistics
import sys

d, a, b = sys.argv[1:4]
data = {}
for v in (a, b):
    for path in sorted(glob.glob(f"{d}/ab-{v}-*.jsonl")):
        for ln in open(path):
            if ln.startswith("{"):
                r = json.loads(ln)
                data.setdefault((r["shape"], r["dtype"], r["direction"]), {}).setdefault(v, []).append(r)
ratios = []
print(f"| row | {a} best (ms) | {b} best (ms) | {b} / {a} |")
print("| --- | --- | --- | ---: |")
for row, by in data.items():
    if a not in by or b not in by:
        continue
    ma, mb = (statistics.median(r["best_ms"] for r in by[v]) for v in (a, b))
    na, nb = (sorted({r["best"] for r in by[v]}) for v in (a, b))
    ratios.append(mb / ma)
    print(f"| {' '.join(row)} | {', '.join(na)} ({ma:.4f}) | {', '.join(nb)} ({mb:.4f}) | {mb / ma:.3f} |")
print(f"\ngeomean {b} / {a}: {statistics.geometric_mean(ratios):.4f}; worst {max(ratios):.3f}; rows {len(ratios)}")
