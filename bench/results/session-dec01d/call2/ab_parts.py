"""Session dec01d, call 2: the A/B's find parts, median over every warm find of each arm (15 FP32 rows x 6 rounds): the
lookup (``timing.lookup_ms``) and the parts of it that read the FindDBs (``lookup_parts``), the store, the whole find.
Usage: python ab_parts.py FOLDER (call2/ab)"""
import glob
import json
import math
import os
import statistics
import sys

parts: dict = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    name = os.path.basename(path)
    arm = "new" if name.startswith("new") else "base" if name.startswith("base") else None
    if arm is None:
        continue
    for ln in open(path):
        if not ln.startswith("{"):
            continue
        r = json.loads(ln)
        t = r["timing"]
        got = {"lookup_ms": t.get("lookup_ms", math.nan), "store_ms": t.get("store_ms", math.nan),
               "find_ms": r["find_ms"]}
        got.update({f"lookup_parts.{k}": v for k, v in t.get("lookup_parts", {}).items()})
        for k, v in got.items():
            parts.setdefault(k, {}).setdefault(arm, []).append(v)
print("| part | base median ms | new median ms | finds (base, new) |")
print("| --- | ---: | ---: | --- |")
for k, v in parts.items():
    b, n = v.get("base", [math.nan]), v.get("new", [math.nan])
    print(f"| {k} | {statistics.median(b):.3f} | {statistics.median(n):.3f} | {len(b)}, {len(n)} |")
