"""Call 5's A/B (ab_defer.json.gz): per row the rounds' finds before / after, the candidates the cost model deferred
(predicted_deferred) and the compile part; the geomean over the rows whose deferral changed and over the others
(which run the same code path: their spread is the noise). Usage: python summarise.py"""
import gzip, json, math, statistics
from collections import defaultdict

rows = json.load(gzip.open("ab_defer.json.gz"))
by = defaultdict(lambda: defaultdict(list))
for r in rows:
    by[(r["shape"], r["direction"])][r["side"]].append(r)
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
changed, same = [], []
print("| row | deferred before / after | finds before, ms | finds after, ms | compile before / after, ms (medians) |")
print("| --- | --- | --- | --- | --- |")
for (shape, d), v in sorted(by.items()):
    fb, fa = [r["find_ms"] for r in v["before"]], [r["find_ms"] for r in v["after"]]
    db, da = v["before"][0]["timing"].get("predicted_deferred"), v["after"][0]["timing"].get("predicted_deferred")
    cb = statistics.median(r["timing"]["compile_ms"] for r in v["before"])
    ca = statistics.median(r["timing"]["compile_ms"] for r in v["after"])
    (changed if db != da else same).append(statistics.median(fa) / statistics.median(fb))
    print(f"| {shape} {d} | {db} / {da} | {' '.join(f'{x:.1f}' for x in fb)} | {' '.join(f'{x:.1f}' for x in fa)} | "
          f"{cb:.1f} / {ca:.1f} |")
print(f"\nafter / before, geomean of row medians: rows whose deferral changed ({len(changed)}) {g(changed):.3f}; "
      f"the other rows ({len(same)}, same code path) {g(same):.3f}, range {min(same):.3f}-{max(same):.3f}")
