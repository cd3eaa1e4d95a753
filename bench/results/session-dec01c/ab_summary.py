"""Session dec01c: the A/B of call 4 (and later calls) from a results folder: per row, the median warm find of the
"new" and "base" children over their rounds, their ratio, torch's first call and new / torch; then geomeans and how
many rows meet issue 18's 3x. Usage: python ab_summary.py FOLDER"""
import glob
import json
import math
import os
import statistics
import sys

d = sys.argv[1]
finds: dict = {}
for path in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
    name = os.path.basename(path)[:-6]
    v = "new" if name.startswith("new") else "base" if name.startswith("base") else None
    if v is None:
        continue
    for ln in open(path):
        if ln.startswith("{"):
            r = json.loads(ln)
            finds.setdefault((r["shape"], r["dtype"], r["direction"]), {}).setdefault(v, []).append(r["find_ms"])
torch = {}
if os.path.exists(os.path.join(d, "torch.jsonl")):
    for ln in open(os.path.join(d, "torch.jsonl")):
        if ln.startswith("{"):
            r = json.loads(ln)
            torch[(r["shape"], r["dtype"], r["direction"])] = r["torch_first_ms"]
print("| row | base ms (rounds) | new ms (rounds) | new / base | torch first ms | base / torch | new / torch |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
ratios, met = [], {"base": 0, "new": 0}
for k, v in finds.items():
    b, n = statistics.median(v.get("base", [math.nan])), statistics.median(v.get("new", [math.nan]))
    t = torch.get(k, math.nan)
    ratios.append(n / b)
    met["base"] += b / t <= 3
    met["new"] += n / t <= 3
    print(f"| {' '.join(k)} | {b:.1f} ({', '.join(f'{x:.1f}' for x in v.get('base', []))}) | {n:.1f} "
          f"({', '.join(f'{x:.1f}' for x in v.get('new', []))}) | {n / b:.3f} | {t:.1f} | {b / t:.2f} | {n / t:.2f} |")
print(f"\ngeomean new / base over {len(ratios)} rows: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}; "
      f"rows within 3x torch's first call (medians): base {met['base']}, new {met['new']} of {len(ratios)}")
