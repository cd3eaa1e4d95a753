"""Session nov30c call 1: which resident-B tiles (PERSIST = 2; BM, BN, WGS, STAGES, TMA) a find should measure beside
its configs, chosen greedily with each layer held out in turn. Per layer: cuDNN's best plan, the best of the solver's
find configs (today's, the twins included) and each resident config, isolated kernel time, the median of three
interleaved passes (sweep_*.json.gz). Usage: python pick_resident.py [K]"""
import gzip
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
K = int(sys.argv[1]) if len(sys.argv) > 1 else 4
SOLVER = {"F": "ConvImplicitGemmHopperFwd", "B": "ConvImplicitGemmHopperBwd"}
tile = lambda c: (c["BM"], c["BN"], c["WGS"], c["STAGES"], c["TMA"])  # noqa: E731
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731


def load(d):
    layers = []
    for s in ("resnet50", "nonresnet", "padded"):
        for row in json.load(gzip.open(HERE / f"sweep_{d}_{s}.json.gz"))["rows"]:
            find = row["others"].get(SOLVER[d]) or []
            if not (row["cudnn"] and find):
                continue
            cud = min(r["isolated_ms"] for r in row["cudnn"])
            base = min(r["isolated_ms"] for r in find)
            res = {}
            for r in row["ours"]:
                if r["cfg"]["PERSIST"] == 2:
                    res[tile(r["cfg"])] = min(res.get(tile(r["cfg"]), 1e9), r["isolated_ms"])
            spread = [(max(r["isolated_passes"]) - min(r["isolated_passes"])) / r["isolated_ms"]
                      for r in row["ours"] + find + row["cudnn"]]
            layers.append({"name": f"{d} {s[:3]} {row['layer']}", "cud": cud, "base": base, "res": res,
                           "spread": statistics.median(spread)})
    return layers


def score(layers, picks):
    return gm([min([L["base"]] + [L["res"][t] for t in picks if t in L["res"]]) / L["cud"] for L in layers])


def greedy(layers, k):
    picks = []
    cands = sorted({t for L in layers for t in L["res"]})
    for _ in range(k):
        best = min(cands, key=lambda t: (score(layers, picks + [t]), t))
        if score(layers, picks + [best]) >= score(layers, picks) - 1e-9:
            break
        picks.append(best)
    return picks


for dirs in ("F", "B", "FB"):
    layers = [L for d in dirs for L in load(d)]
    print(f"== {dirs}: {len(layers)} layers; median spread of a config's three passes "
          f"{statistics.median(L['spread'] for L in layers):.3f}")
    oracle = gm([min([L["base"]] + list(L["res"].values())) / L["cud"] for L in layers])
    print(f"  find today {score(layers, []):.3f}; with every resident config (oracle) {oracle:.3f}")
    for k in range(1, K + 1):
        picks = greedy(layers, k)
        held = []
        for i, L in enumerate(layers):
            p = greedy(layers[:i] + layers[i + 1:], k)
            held.append(min([L["base"]] + [L["res"][t] for t in p if t in L["res"]]) / L["cud"])
        print(f"  k={k}: all layers' picks {picks} -> {score(layers, picks):.3f}; each layer held out of its picks "
              f"{gm(held):.3f}")
    picks = greedy(layers, K)
    for sub in ("res", "non", "pad"):
        s = [L for L in layers if L["name"].split()[1] == sub]
        if s:
            print(f"  {sub}: {len(s)} layers, today {score(s, []):.3f}, with the {K} picks {score(s, picks):.3f}")
