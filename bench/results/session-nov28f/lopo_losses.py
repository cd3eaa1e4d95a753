"""Issue 20: where the leave-one-preset-out losses of the shipped recipe are (session nov28's seed-1 rows), and the
largest group's records in the shipped DB: FP16 NCHW backward data of 1x1 filters, cuDNN's time over the 1x1 GEMM's
by spatial size.

    python bench/results/session-nov28f/lopo_losses.py > bench/results/session-nov28f/lopo_losses.txt
"""
import collections
import gzip
import json
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
rows = json.load(gzip.open(ROOT / "bench/results/session-nov28/lopo-base-seed1/rows.json.gz"))
groups = collections.defaultdict(lambda: [0, 0, 0.0, 1.0])
pairs = collections.defaultdict(lambda: [0, 0.0])
total = 0.0
for r in rows:
    rr = r["rows"]        # (solver, measured ms, predicted ms, today's ms, the ranking's place)
    best = min(rr, key=lambda x: x[1])
    pick = min(rr, key=lambda x: x[4])
    s = pick[1] / best[1]
    k = r["key"].split("-")
    dt = next(t for t in k if t in ("FP32", "FP16", "BF16"))
    g = groups[(dt, "NHWC" if "NHWC" in k else "NCHW", k[-1][0])]
    g[0] += 1
    g[1] += s <= 1.0000001
    g[2] += s - 1
    g[3] = max(g[3], s)
    total += s - 1
    if s > 1.0000001:
        pairs[(pick[0], best[0])][0] += 1
        pairs[(pick[0], best[0])][1] += s - 1
print(f"{len(rows)} held-out problems; mean slowdown {100 * total / len(rows):.2f}%\n")
print("| type | layout | dir | problems | top-1 | mean slowdown | worst | share of the summed slowdown |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
for (dt, lay, d), (n, top, sl, worst) in sorted(groups.items(), key=lambda kv: -kv[1][2]):
    print(f"| {dt} | {lay} | {d} | {n} | {100 * top / n:.1f}% | {100 * sl / n:.2f}% | {worst:.2f}x | {100 * sl / total:.1f}% |")
print("\nThe costliest (pick, fastest) pairs:\n\n| picked | fastest | problems | summed slowdown |\n| --- | --- | ---: | ---: |")
for (a, b), (n, sl) in sorted(pairs.items(), key=lambda kv: -kv[1][1])[:8]:
    print(f"| {a} | {b} | {n} | {sl:.2f} |")

con = sqlite3.connect(ROOT / "finddb/sm_90-132.sqlite")
t = collections.defaultdict(dict)
for key, sid, ms in con.execute("SELECT problem_key, solver_id, time_ms FROM find_records WHERE problem_key LIKE "
                                "'%-1x1-%-0x0-1x1-1x1-0-NCHW-FP16-B'"):
    t[key][sid] = ms
by_hw = collections.defaultdict(list)
for key, v in t.items():
    if "ConvCudnnBwd" in v and "GemmBwd1x1_stride1" in v:
        f = key.split("-")
        by_hw[int(f[1]) * int(f[2])].append(v["ConvCudnnBwd"] / v["GemmBwd1x1_stride1"])
print("\nFP16 NCHW backward data, 1x1 filters, stride 1: cuDNN's time / GemmBwd1x1_stride1's in the shipped DB\n")
print("| H x W of dy | problems | min | median | max |\n| ---: | ---: | ---: | ---: | ---: |")
for hw, v in sorted(by_hw.items()):
    v.sort()
    print(f"| {hw} | {len(v)} | {v[0]:.2f} | {v[len(v) // 2]:.2f} | {v[-1]:.2f} |")
