"""Greedy choice of 32-deep (TMA = 2) tiles for the forward's find, from a sweep_configs.py --json of every TMA = 2
config on PADDED_C (call1/sweep.json): each step adds the tile (BM, BN, WGS, STAGES, PERSIST, PINGPONG) that most lowers
the geomean over the layers of min(the find's configs today, the chosen tiles) / cuDNN's best plan (isolated time);
with --twin a 32-wide tile counts as its 64-wide twin where K > 32 (BN = 32 only for K <= 32), else only where valid.
With --loo each layer is held out in turn and the picks made on the others (how stable the choice is).
    python pick_row64.py call1/sweep.json.gz [--n 4] [--loo] [--twin]"""
import gzip, json, math, sys
from collections import Counter

args = sys.argv[1:]
n = int(args[args.index("--n") + 1]) if "--n" in args else 4
TWIN = "--twin" in args
rows = json.load((gzip.open if args[0].endswith(".gz") else open)(args[0]))["rows"]
key = lambda c: (c["BM"], c["BN"], c["WGS"], c["STAGES"], c["PERSIST"], c["PINGPONG"])
layers = {}
for r in rows:
    cb = min(x["isolated_ms"] for x in r["cudnn"])
    find = min(x["isolated_ms"] for x in r["others"]["ConvImplicitGemmHopperFwd"]) / cb
    t = {key(x["cfg"]): x["isolated_ms"] / cb for x in r["ours"] if x["cfg"].get("TMA") == 2}
    layers[r["layer"]] = (find, t)


def score(names, picks):
    v = []
    for nm in names:
        find, t = layers[nm]
        best = find
        for k in picks:
            if k in t:
                best = min(best, t[k])
            elif TWIN and k[1] == 32 and (k[0], 64) + k[2:] in t:    # BN = 32 where K > 32: the 64-wide twin
                best = min(best, t[(k[0], 64) + k[2:]])
        v.append(math.log(best))
    return math.exp(sum(v) / len(v))


def greedy(names):
    cands = set().union(*(layers[nm][1] for nm in names))
    picks = []
    for _ in range(n):
        picks.append(min(cands - set(picks), key=lambda k: score(names, picks + [k])))
    return picks


names = list(layers)
print(f"find today {score(names, []):.3f}; every TMA = 2 config: {score(names, list(set().union(*(t for _, t in layers.values())))):.3f}")
picks = greedy(names)
for i in range(1, n + 1):
    print(f"+{picks[i - 1]}: {score(names, picks[:i]):.3f}")
if "--loo" in args:
    seen, held = Counter(), []
    for nm in names:
        p = greedy([x for x in names if x != nm])
        seen.update(p)
        held.append(math.log(score([nm], p)))
    print(f"held out: geomean {math.exp(sum(held) / len(held)):.3f}; picks {seen.most_common(8)}")
