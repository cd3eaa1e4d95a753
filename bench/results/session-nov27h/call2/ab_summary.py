"""A/B summary of call 2 (session nov27h): per FP32 row, each arm's median warm find over the rounds, its setup and
compile medians, and the geomean of the per-row medians."""
import glob
import json
import math
import os
import statistics
import sys

r = sys.argv[1]
arms = {}
for arm in ("before", "after"):
    rows = {}
    for f in sorted(glob.glob(os.path.join(r, f"ab-{arm}-*.jsonl"))):
        for ln in open(f):
            if ln.startswith("{"):
                d = json.loads(ln)
                rows.setdefault((d["shape"], d["direction"]), []).append(d)
    arms[arm] = rows
keys = sorted(set(arms["before"]) & set(arms["after"]))
med = lambda rs, f: statistics.median(f(x) for x in rs)  # noqa: E731
print("| row | before ms (rounds) | after ms (rounds) | setup b / a | compile b / a | after lower |")
print("| --- | --- | --- | --- | --- | --- |")
lb, la, lower = [], [], 0
for k in keys:
    b, a = arms["before"][k], arms["after"][k]
    mb, ma = med(b, lambda x: x["find_ms"]), med(a, lambda x: x["find_ms"])
    lb.append(math.log(mb))
    la.append(math.log(ma))
    lower += ma < mb
    rounds = lambda rs: ", ".join("%.0f" % x["find_ms"] for x in rs)  # noqa: E731
    part = lambda rs, name: med(rs, lambda x: x["timing"].get(name, 0.0))  # noqa: E731
    print(f"| {k[0]} {k[1]} | {mb:.1f} ({rounds(b)}) | {ma:.1f} ({rounds(a)}) | "
          f"{part(b, 'setup_ms'):.1f} / {part(a, 'setup_ms'):.1f} | "
          f"{part(b, 'compile_ms'):.1f} / {part(a, 'compile_ms'):.1f} | {'yes' if ma < mb else ''} |")
if keys:
    print(f"\ngeomean of the per-row medians: before {math.exp(sum(lb) / len(lb)):.1f} ms, after "
          f"{math.exp(sum(la) / len(la)):.1f} ms; after lower in {lower} of {len(keys)} rows")
