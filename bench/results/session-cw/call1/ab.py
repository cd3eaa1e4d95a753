"""Per layer, before (HEAD 9649cb0) and after (this session's kernels), same host, same run: the Hopper solver's
fastest config / cuDNN's best plan (isolated), over its find configs, DB config and the swept configs, and over the
find and DB configs only; python3 ab.py r/sweep_F_old.json r/sweep_F_new.json"""
import json, math, sys

def best(row, sid, only_others=False):
    cb = min(r["isolated_ms"] for r in row["cudnn"])
    oth = [r["isolated_ms"] for r in row["others"].get(sid, [])]
    ours = [] if only_others else [r["isolated_ms"] for r in row["ours"]]
    return min(oth + ours) / cb if oth + ours else None

old, new = (json.load(open(p))["rows"] for p in sys.argv[1:3])
sid = next(iter(old[0]["others"]))
gm = {k: [] for k in ("a0", "a1", "f0", "f1")}
print(f"{'layer':28s} {'all: old':>9s} {'new':>6s}   {'find+DB: old':>12s} {'new':>6s}")
for o in old:
    n = next((r for r in new if r["layer"] == o["layer"]), None)
    if not n or not o["cudnn"] or not n["cudnn"]:
        continue
    a0, a1, f0, f1 = best(o, sid), best(n, sid), best(o, sid, True), best(n, sid, True)
    for k, v in zip(gm, (a0, a1, f0, f1)):
        gm[k].append(math.log(v))
    print(f"{o['layer']:28s} {a0:9.3f} {a1:6.3f}   {f0:12.3f} {f1:6.3f}")
g = {k: math.exp(sum(v) / len(v)) for k, v in gm.items()}
print(f"{'geomean':28s} {g['a0']:9.3f} {g['a1']:6.3f}   {g['f0']:12.3f} {g['f1']:6.3f}   ({len(gm['a0'])} layers)")
