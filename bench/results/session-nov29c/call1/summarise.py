"""Per patch: geomean of find ms after/before over the rows (medians of the rounds), rows faster, and every
round's pair, from ab_<name>.json.gz (session nov29b's call1/ab.py output). Usage: python summarise.py"""
import gzip, json, math, statistics
from collections import defaultdict

for name in ("gil", "memo"):
    rows = json.load(gzip.open(f"ab_{name}.json.gz"))
    by = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[(r["shape"], r["direction"])][r["side"]].append(r["find_ms"])
    ratios = []
    faster = 0
    for k, v in sorted(by.items()):
        b, a = statistics.median(v["before"]), statistics.median(v["after"])
        ratios.append(a / b)
        faster += a < b
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    allb = [x for v in by.values() for x in v["before"]]
    alla = [x for v in by.values() for x in v["after"]]
    print(f"{name}: {len(ratios)} rows, after/before geomean {g:.3f}, after faster in {faster}; "
          f"every run: before median {statistics.median(allb):.1f} ms, after {statistics.median(alla):.1f} ms")
