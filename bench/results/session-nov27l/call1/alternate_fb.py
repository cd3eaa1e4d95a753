"""Which three-warpgroup config, added to the F and B finds' alternates, adds most to what a find measures: from call 1's
sweeps (r/sweep_F.json, r/sweep_B.json: isolated kernel time on ResNet-50's N=32 FP16 layers), per layer the best of the
Hopper solver's find configs (default and alternates, as the code before this change lists them) against cuDNN's best
plan, and the same with each WGS = 3 shape swept (BN, PERSIST, TMA, split; 4 stages) added; then the same choice with
each layer held out in turn (the shape chosen on the other 21 layers, scored on the held-out one).
python3 alternate_fb.py [FOLDER PREFIX]   (default: r sweep_; run before ALTERNATE_TILES took the chosen tile:
alternate_fb.txt; call 6: ../call6/r nr_, its non-ResNet sweeps, after: a find's configs less the WGS = 3 ones are the
configs before)"""
import json, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", ".."))
from miofind.predict import parse_problem_key  # noqa: E402
from miofind.registry import get_solver  # noqa: E402


def gm(v):
    v = list(v)
    return math.exp(sum(map(math.log, v)) / len(v))


FOLDER, PREFIX = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else (os.path.join(HERE, "r"), "sweep_")
for d, sid in (("F", "ConvImplicitGemmHopperFwd"), ("B", "ConvImplicitGemmHopperBwd")):
    s = get_solver(sid)
    base, cands = {}, {}
    for row in json.load(open(os.path.join(FOLDER, f"{PREFIX}{d}.json")))["rows"]:
        if not row["cudnn"]:
            continue
        p = parse_problem_key(row["key"])
        finds = [s.default_config(p)] + [c for c in s.find_configs(p) if c and c.get("WGS") != 3]
        cb = min(r["isolated_ms"] for r in row["cudnn"])
        timed = [r for rs in row["others"].values() for r in rs] + row["ours"]
        f = [r["isolated_ms"] for r in timed if r["cfg"] in finds]
        if not f:
            continue
        base[row["layer"]] = min(f) / cb
        for r in row["ours"]:
            c = r["cfg"]
            if c.get("WGS") == 3:
                k = (c["BN"], c["PERSIST"], c["TMA"], c["SPLITK"] > 1)
                cands.setdefault(k, {})[row["layer"]] = min(cands.get(k, {}).get(row["layer"], math.inf),
                                                            r["isolated_ms"] / cb)
    score = lambda k, layers: gm(min(base[x], cands[k].get(x, math.inf)) for x in layers)  # noqa: E731
    print(f"{d}: find configs {gm(base.values()):.4f} of cuDNN ({len(base)} layers); with one WGS = 3 shape added:")
    for k in sorted(cands, key=lambda k: score(k, base)):
        better = sum(1 for x in base if cands[k].get(x, math.inf) < base[x])
        print(f"  BN {k[0]:3d} PERSIST {k[1]} TMA {k[2]} split {int(k[3])}: {score(k, base):.4f} (better on {better})")
    held = []
    for x in base:
        rest = [y for y in base if y != x]
        k = min(cands, key=lambda k: score(k, rest))
        held.append(min(base[x], cands[k].get(x, math.inf)))
    print(f"  each layer held out, the shape chosen on the others: {gm(held):.4f}")
