"""Where a leave-one-preset-out run's slowdown comes from: python .../analyze.py ROWS.json (eval_costmodel --rows)"""
import json, sys, math, collections
rows = json.load(open(sys.argv[1]))
rows = [r for r in rows if r["held"] != "resnet101"]
sl = []; miss = collections.Counter(); cnt = collections.Counter(); pair = collections.Counter(); slsum = collections.Counter()
for r in rows:
    recs = r["rows"]  # (solver, measured, model pred, today pred, model place)
    best = min(x[1] for x in recs)
    pick = min(recs, key=lambda x: x[4])
    s = pick[1] / best
    sl.append(s)
    fam = r["key"].split("-")[-3:]
    g = (r["held"], r["key"].split("-")[-2], r["key"].split("-")[-1])
    if s > 1.0:
        bs = min(recs, key=lambda x: x[1])[0]
        pair[(pick[0], bs)] += 1
        slsum[(pick[0], bs)] += s - 1
n = len(sl)
print("problems", n, "top1", sum(s == 1.0 for s in sl) / n, "mean", sum(sl) / n - 1)
for th in (1.01, 1.03, 1.05, 1.1, 1.2, 1.5, 2):
    print(f"within {th}: {sum(s <= th for s in sl) / n:.3f}  share of slowdown from picks > {th}: {sum(s - 1 for s in sl if s > th) / sum(s - 1 for s in sl):.2f}")
print("top confusion pairs (pick, best): count, slowdown sum")
for k, v in slsum.most_common(25):
    print(f"  {k[0]:32s} {k[1]:32s} {pair[k]:4d} {v:.2f}")
