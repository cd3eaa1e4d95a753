"""Call 2's A/B (ab_pipe.json.gz): per row the medians of find, timing and the best candidate's median before/after, and
each side's candidates whose timing took over 5 ms. Usage: python summarise.py"""
import gzip, json, math, statistics
from collections import defaultdict

rows = json.load(gzip.open("ab_pipe.json.gz"))
by = defaultdict(lambda: defaultdict(list))
for r in rows:
    by[(r["shape"], r["direction"])][r["side"]].append(r)
ratios, best_ratios = [], []
print("| row | find before / after ms | timing before / after ms | best's median before / after us |")
print("| --- | --- | --- | --- |")
for (shape, d), v in sorted(by.items()):
    med = lambda side, f: statistics.median(f(r) for r in v[side])
    fb, fa = med("before", lambda r: r["find_ms"]), med("after", lambda r: r["find_ms"])
    tb, ta = med("before", lambda r: r["timing"]["timing_ms"]), med("after", lambda r: r["timing"]["timing_ms"])
    bb, ba = med("before", lambda r: r["best_ms"]), med("after", lambda r: r["best_ms"])
    ratios.append(fa / fb)
    best_ratios.append(ba / bb)
    print(f"| {shape} {d} | {fb:.1f} / {fa:.1f} | {tb:.1f} / {ta:.1f} | {bb * 1e3:.1f} / {ba * 1e3:.1f} |")
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"\nfind after / before, geomean over {len(ratios)} rows: {g(ratios):.3f}; best candidate's median after / before: "
      f"{g(best_ratios):.4f} (worst {max(best_ratios, key=lambda x: abs(math.log(x))):.4f})")
slow = [(r["side"], r["shape"], r["direction"], c["solver_id"], round(c["timing_ms"], 1), c["runs"])
        for r in rows for c in r["timing"]["candidates"] if c["timing_ms"] > 5]
print(f"candidates whose timing took over 5 ms: before {sum(s[0] == 'before' for s in slow)}, "
      f"after {sum(s[0] == 'after' for s in slow)}")
