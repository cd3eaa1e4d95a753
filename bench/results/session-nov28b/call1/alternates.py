"""TF32 find alternates (solvers/implicit_gemm_hopper_base.ALTERNATE_TILES_TF32) from call 1's sweep (r/tf32.json):
greedy choice of n persistent copy-engine tiles (BM, BN, WGS, STAGES, PINGPONG) that, with the default, come closest to
the best config on every layer; scored on all layers and with each layer held out in turn (the set chosen on the
other 21, evaluated on the held-out one). Isolated kernel time over cuDNN's best TF32 plan, geomean.

    python bench/results/session-nov28b/call1/alternates.py > bench/results/session-nov28b/call1/alternates.txt
"""
import json, math, os

rows = [r for r in json.load(open(os.path.join(os.path.dirname(__file__), "r", "tf32.json")))["rows"] if r["ours"] and r["cudnn"]]
key = lambda c: (c["BM"], c["BN"], c["WGS"], c["STAGES"], c["PINGPONG"])  # noqa: E731
cands = sorted({key(o["cfg"]) for r in rows for o in r["ours"] if o["cfg"]["PERSIST"] and o["cfg"]["TMA"]})
cud = {r["layer"]: min(o["isolated_ms"] for o in r["cudnn"]) for r in rows}
dflt = {r["layer"]: r["ours"][0]["isolated_ms"] for r in rows}       # the sweep times the default first


def t(r, k):
    v = [o["isolated_ms"] for o in r["ours"] if key(o["cfg"]) == k and o["cfg"]["PERSIST"] and o["cfg"]["TMA"]]
    return min(v) if v else math.inf


def gm(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def score(sel, rs):
    return gm([min([dflt[r["layer"]]] + [t(r, k) for k in sel]) / cud[r["layer"]] for r in rs])


def greedy(rs, n):
    sel = []
    for _ in range(n):
        sel.append(min((c for c in cands if c not in sel), key=lambda c: score(sel + [c], rs)))
    return sel


print(f"{len(rows)} layers; default alone {score([], rows):.3f}; best of all {gm([min(o['isolated_ms'] for o in r['ours']) / cud[r['layer']] for r in rows]):.3f}")
for n in (3, 4, 5):
    sel = greedy(rows, n)
    held = [min([dflt[r["layer"]]] + [t(r, k) for k in greedy(rows[:i] + rows[i + 1:], n)]) / cud[r["layer"]]
            for i, r in enumerate(rows)]
    print(f"n={n}: {sel}: all layers {score(sel, rows):.3f}, each layer held out {gm(held):.3f}")
