"""Summarise the A/B children of a session-warmfind call: per row, each variant's warm find wall ms (median
over rounds, and every round), and the breakdown medians. Usage: ab_summary.py DIR VARIANT..."""
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
keys = ("lookup_ms", "select_ms", "setup_ms", "configs_ms", "compile_ms", "measure_ms", "verify_ms", "timing_ms")
print("| row | " + " | ".join(f"{v} ms (rounds)" for v in variants) + " |")
print("| --- |" + " ---: |" * len(variants))
tot = {v: [] for v in variants}
for row, by in data.items():
    cells = []
    for v in variants:
        ms = [r["find_ms"] for r in by.get(v, [])]
        if ms:
            tot[v].append(statistics.median(ms))
        cells.append(f"{statistics.median(ms):.1f} ({' / '.join(f'{m:.0f}' for m in ms)})" if ms else "")
    print(f"| {row[0]} {row[1]} {row[2]} | " + " | ".join(cells) + " |")
print("| geomean of medians | " + " | ".join(
    f"{statistics.geometric_mean(tot[v]):.1f}" if tot[v] else "" for v in variants) + " |")
print()
print("breakdown medians (" + ", ".join(keys) + ")")
for row, by in data.items():
    for v in variants:
        rs = [r for r in by.get(v, []) if r.get("timing")]
        if rs:
            print(f"{row[0]} {row[2]} {v}: " + " / ".join(
                f"{statistics.median(r['timing'].get(k, 0) for r in rs):.1f}" for k in keys))
