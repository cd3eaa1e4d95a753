"""Per-find breakdown of bench_cold child JSON lines (session nov27h): total and the timing fields, per row."""
import json
import sys

KEYS = ("lookup_ms", "select_ms", "setup_ms", "configs_ms", "compile_ms", "prefetch_wait_ms", "reference_wait_ms",
        "verify_ms", "timing_ms", "store_ms")
print("row | find ms | " + " | ".join(k[:-3] for k in KEYS))
for ln in open(sys.argv[1]):
    if not ln.startswith("{"):
        continue
    r = json.loads(ln)
    t = r.get("timing", {})
    print(f"{r['shape']} {r['dtype']} {r['direction']} | {r['find_ms']:.1f} | "
          + " | ".join(f"{t.get(k, 0.0):.1f}" for k in KEYS))
