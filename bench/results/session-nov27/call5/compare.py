"""Row by row: call 5's cold finds with the cost model before (cold_old) and after (cold_new) the retrain.
python3 bench/results/session-nov27/call5/compare.py"""
import json
import math
from pathlib import Path

R = Path(__file__).parent / "r"
o = json.load(open(R / "cold_old" / "bench_cold.json"))["layers"]
n = json.load(open(R / "cold_new" / "bench_cold.json"))["layers"]
same, best, warm, empty = 0, [], [], []
for a, b in zip(o, n):
    assert a["key"] == b["key"]
    wa, wb = a["warm"], b["warm"]
    same += wa["best"] == wb["best"]
    best.append(wb["best_ms"] / wa["best_ms"])
    warm.append(wb["find_ms"] / wa["find_ms"])
    empty.append(b["empty"]["find_ms"] / a["empty"]["find_ms"])
    print(f"{a['shape']:24s} {a['dtype']} {a['direction']}  best {wa['best']:26s} {wb['best']:26s} "
          f"{wa['best_ms']:.4f} {wb['best_ms']:.4f} ms  warm find {wa['find_ms']:.1f} {wb['find_ms']:.1f} ms  "
          f"predicted-deferred {wa['timing'].get('predicted_deferred')} {wb['timing'].get('predicted_deferred')}")
g = lambda x: math.exp(sum(map(math.log, x)) / len(x))  # noqa: E731
print(f"same best solver in {same} of {len(o)} rows; geomean new/old: best time {g(best):.3f}, warm find {g(warm):.3f}, "
      f"empty-cache find {g(empty):.3f} (one pair of runs, old first)")
