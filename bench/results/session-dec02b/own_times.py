"""Session dec02b: whether the own candidates' timings moved when they are measured while the cuDNN prefetch thread
still loads cuDNN's modules ("new", find.measure_order) against measured after it ("base"). From an A/B folder of
bench_cold children (newN.jsonl, baseN.jsonl): per row and own (solver, config) fully timed in both, the ratio of the
medians (over rounds) of its time_ms, new / base; per row how often new put cuDNN last, and the picks' agreement.
Usage: python own_times.py FOLDER"""
import glob
import json
import math
import os
import statistics
import sys

d = sys.argv[1]
times: dict = {}     # (row, solver, config) -> {variant: [ms]}
last: dict = {}      # row -> [cudnn_last of each new child]
picks: dict = {}     # row -> {variant: [best solver]}
for path in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
    name = os.path.basename(path)[:-6]
    v = "new" if name.startswith("new") else "base" if name.startswith("base") else None
    if v is None:
        continue
    for ln in open(path):
        if not ln.startswith("{"):
            continue
        r = json.loads(ln)
        row = f"{r['shape']} {r['dtype']} {r['direction']}"
        t = r.get("timing") or {}
        if v == "new":
            last.setdefault(row, []).append(bool(t.get("cudnn_last")))
        picks.setdefault(row, {}).setdefault(v, []).append(r.get("best"))
        for c in t.get("candidates", []):
            if c["cut"] or "Cudnn" in c["solver_id"]:
                continue
            k = (row, c["solver_id"], json.dumps(c["config"], sort_keys=True))
            times.setdefault(k, {}).setdefault(v, []).append(c["time_ms"])
print("| row | own candidates in both | median new / base of their times (min-max) | new put cuDNN last | "
      "best (base) | best (new) |")
print("| --- | ---: | --- | ---: | --- | --- |")
allr = []
for row in picks:
    rs = [statistics.median(v["new"]) / statistics.median(v["base"]) for (r, _, _), v in times.items()
          if r == row and v.get("new") and v.get("base")]
    allr += rs
    med = f"{statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})" if rs else "-"
    lt = last.get(row, [])
    bp = lambda v: ", ".join(f"{s}x{n}" for s, n in sorted(
        {s: picks[row].get(v, []).count(s) for s in set(picks[row].get(v, []))}.items()))
    print(f"| {row} | {len(rs)} | {med} | {sum(lt)} of {len(lt)} | {bp('base')} | {bp('new')} |")
if allr:
    g = math.exp(sum(map(math.log, allr)) / len(allr))
    print(f"\nown candidates' times, new / base: geomean {g:.3f} over {len(allr)} (row, solver, config); "
          f"median {statistics.median(allr):.3f}; {sum(r > 1.05 for r in allr)} above 1.05, "
          f"{sum(r < 0.95 for r in allr)} below 0.95")
