"""Summarise session-nov27g's warm-find A/B children: per row, each variant's find wall ms (median over rounds, every
round), the geomean of the medians, in how many rows the second variant's median is lower, and per variant the medians
of the breakdown parts (prefetch_wait_ms among them) and of the cuDNN candidates' summed verify ms. Usage:
ab_load.py DIR VARIANT_A VARIANT_B"""
import glob
import json
import statistics
import sys

d, variants = sys.argv[1], sys.argv[2:]
data = {}
for v in variants:
    for path in sorted(glob.glob(f"{d}/ab-{v}-*.jsonl")):
        for ln in open(path):
            if ln.startswith("{"):
                r = json.loads(ln)
                data.setdefault((r["shape"], r["dtype"], r["direction"]), {}).setdefault(v, []).append(r)
keys = ("lookup_ms", "setup_ms", "configs_ms", "compile_ms", "prefetch_wait_ms", "verify_ms", "timing_ms")


def cudnn_verify(r):
    return sum(c["verify_ms"] or 0 for c in r["timing"].get("candidates", []) if "Cudnn" in c["solver_id"])


print("| row | " + " | ".join(f"{v} ms (rounds)" for v in variants) + " | " +
      " | ".join(f"{v}: {', '.join(k[:-3] for k in keys)}, cuDNN verify" for v in variants) + " |")
print("| --- |" + " ---: |" * len(variants) + " --- |" * len(variants))
tot = {v: [] for v in variants}
lower = both = 0
for row, by in sorted(data.items()):
    cells, parts, med = [], [], {}
    for v in variants:
        rs = by.get(v, [])
        ms = [r["find_ms"] for r in rs]
        if ms:
            med[v] = statistics.median(ms)
            tot[v].append(med[v])
        cells.append(f"{med[v]:.1f} ({' / '.join(f'{m:.0f}' for m in ms)})" if ms else "")
        rt = [r for r in rs if r.get("timing")]
        parts.append(" / ".join(f"{statistics.median(r['timing'].get(k, 0) for r in rt):.1f}" for k in keys)
                     + f" / {statistics.median(cudnn_verify(r) for r in rt):.1f}" if rt else "")
    if len(med) == 2:
        both += 1
        lower += med[variants[1]] < med[variants[0]]
    print(f"| {row[0]} {row[1]} {row[2]} | " + " | ".join(cells) + " | " + " | ".join(parts) + " |")
print("| geomean of medians | " + " | ".join(
    f"{statistics.geometric_mean(tot[v]):.1f}" if tot[v] else "" for v in variants) + " |" + " |" * len(variants))
print()
print(f"{variants[1]} lower than {variants[0]} in {lower} of {both} rows")
