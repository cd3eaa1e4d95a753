"""Session epi: which persistent copy-engine tiles a find of the Hopper backward-data solver should measure beside the
default, from call 8's sweeps (every persistent copy-engine config at 3, 4 and 8 stages, isolated, on ResNet-50's and
the non-ResNet B layers, FP16, N=32, beside cuDNN's best plan): for each layer held out in turn, the three
(BM, BN, WGS, STAGES) tiles whose fastest with the default is the least geomean over the other layers; then that
triple on the held-out layer. Also the forward's ALTERNATE_TILES on the same data.
    python b_alternates.py  (from the repository root)"""
import itertools
import json
import math
import sys

sys.path[:0] = ["."]
from solvers.implicit_gemm_hopper_fwd import ALTERNATE_TILES  # noqa: E402

gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
rows = []
for f in ("bench/results/session-epi/call8/r/sweep_b_r50.json", "bench/results/session-epi/call8/r/sweep_b_nr.json"):
    for r in json.load(open(f))["rows"]:
        if not r["ours"] or not r["cudnn"]:
            continue
        cu = min(x["isolated_ms"] for x in r["cudnn"])
        d = r["ours"][0]["cfg"]              # sweep_configs times the default first
        t = {}
        for x in r["ours"]:
            c = x["cfg"]
            if c.get("PERSIST") == 1 and c.get("TMA") == 1 and c["SPLITK"] == 1:
                t[(c["BM"], c["BN"], c["WGS"], c["STAGES"])] = x["isolated_ms"]
        if d.get("PERSIST") == 1 and d.get("TMA") == 1:
            rows.append((r["layer"], cu, t, (d["BM"], d["BN"], d["WGS"], d["STAGES"]), r["ours"][0]["isolated_ms"]))
tiles = sorted({k for _, _, t, _, _ in rows for k in t})


def score(rr, s):
    return gm([min([td] + [t[x] for x in s if x in t]) / cu for _, cu, t, _, td in rr])


print(f"{len(rows)} layers whose default is a persistent copy-engine config; {len(tiles)} tiles")
print(f"default alone {gm([td / cu for _, cu, _, _, td in rows]):.3f}, best of all {gm([min(list(t.values()) + [td]) / cu for _, cu, t, _, td in rows]):.3f}")
print(f"the forward's ALTERNATE_TILES {ALTERNATE_TILES}: {score(rows, ALTERNATE_TILES):.3f}")
best3 = min(itertools.combinations(tiles, 3), key=lambda s: score(rows, s))
print(f"in sample, best triple: {best3} {score(rows, best3):.3f}")
out, picks = [], {}
for i, held in enumerate(rows):
    s = min(itertools.combinations(tiles, 3), key=lambda s: score(rows[:i] + rows[i + 1:], s))
    picks[s] = picks.get(s, 0) + 1
    out.append(score([held], s))
print(f"held out in turn: {gm(out):.3f}; triples chosen: {picks}")
