"""Per bench_cold row (warm kernel cache): lookup_ms and its parts (FindResult.timing['lookup_parts']).

    python bench/results/session-nov28f/prepared/lookup_parts.py <bench_cold.json>
"""
import json
import sys

NAMES = ("entry", "device", "candidates", "db", "reads", "cudnn_prefetch", "order")
d = json.load(open(sys.argv[1]))
print("| layer | type | dir | find ms | lookup ms | " + " | ".join(NAMES) + " |")
print("| --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in NAMES) + " |")
for r in d["layers"]:
    w = r.get("warm") or {}
    t = w.get("timing") or {}
    parts = t.get("lookup_parts") or {}
    cells = " | ".join(f"{parts[n]:.2f}" if n in parts else "-" for n in NAMES)
    print(f"| {r['shape']} | {r['dtype']} | {r['direction']} | {w.get('find_ms', float('nan')):.1f} | "
          f"{t.get('lookup_ms', float('nan')):.2f} | {cells} |")
