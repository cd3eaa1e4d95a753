"""Session dec01e: an A/B's find parts, median over every warm find of each arm: each top-level part of the find's
timing (lookup, select, setup, configs, compile, measure with verify and timing, store) and the whole find, and the
summed candidate compile times. Usage: python ab_parts.py FOLDER (call1/ab)"""
import glob
import json
import math
import os
import statistics
import sys

KEYS = ("lookup_ms", "select_ms", "setup_ms", "configs_ms", "compile_ms", "reference_ms", "measure_ms", "verify_ms",
        "timing_ms", "store_ms")
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
        t = r["timing"] or {}
        got = {k: t.get(k, math.nan) for k in KEYS}
        got["candidates' compile_ms (sum)"] = sum(c.get("compile_ms") or 0.0 for c in t.get("candidates", []))
        got["find_ms"] = r["find_ms"]
        for k, v in got.items():
            parts.setdefault(k, {}).setdefault(arm, []).append(v)
print("| part | base median ms | new median ms | finds (base, new) |")
print("| --- | ---: | ---: | --- |")
for k, v in parts.items():
    b, n = v.get("base", [math.nan]), v.get("new", [math.nan])
    print(f"| {k} | {statistics.median(b):.3f} | {statistics.median(n):.3f} | {len(b)}, {len(n)} |")
