"""Call 4's A/B (out/ab_first_run.json.gz: ab.py's rows, each side and round): per row the median find before and
after, the GEMM candidates' verification and the preparation (compile_ms) medians, the geomean of the find's
after / before over the rows with a GEMM candidate measured and over the others. Usage: python summarise.py"""
import gzip, json, math, statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
rows = json.load(gzip.open(HERE / "out/ab_first_run.json.gz"))
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
by = defaultdict(lambda: defaultdict(list))
for r in rows:
    if "side" not in r or "timing" not in r or not r["timing"]:
        continue
    t = r["timing"]
    gem = [c for c in t.get("candidates", []) if c["solver_id"].startswith("Gemm")]
    b = by[(r["shape"], r["dtype"], r["direction"])][r["side"]]
    b.append((r["find_ms"], sum(c["verify_ms"] for c in gem) if gem else None, t.get("compile_ms", 0.0),
              t.get("verify_ms", 0.0)))
med = lambda xs: statistics.median(xs) if xs else float("nan")
with_g, without = [], []
print("| row | GEMM measured | find before -> after ms | GEMM verify before -> after ms | preparation before -> after ms | "
      "all verification before -> after ms |")
print("| --- | --- | --- | --- | --- | --- |")
for key in sorted(by):
    bef, aft = by[key]["before"], by[key]["after"]
    if not bef or not aft:
        continue
    gm = any(x[1] is not None for x in bef + aft)
    fb, fa = med([x[0] for x in bef]), med([x[0] for x in aft])
    (with_g if gm else without).append(fa / fb)
    gv = lambda xs: med([x[1] for x in xs if x[1] is not None])
    print(f"| {' '.join(key)} | {'yes' if gm else 'no'} | {fb:.1f} -> {fa:.1f} | "
          + (f"{gv(bef):.2f} -> {gv(aft):.2f}" if gm else "-")
          + f" | {med([x[2] for x in bef]):.1f} -> {med([x[2] for x in aft]):.1f} | "
          f"{med([x[3] for x in bef]):.1f} -> {med([x[3] for x in aft]):.1f} |")
print(f"\nfind after / before, geomean of row medians: rows with a GEMM candidate measured {g(with_g):.3f} "
      f"({len(with_g)} rows, faster in {sum(x < 1 for x in with_g)}), the others {g(without):.3f} ({len(without)} rows, "
      f"faster in {sum(x < 1 for x in without)})")
