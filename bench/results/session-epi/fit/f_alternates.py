"""Session epi: which persistent copy-engine tiles a find of the Hopper forward should measure beside the default.
From call 1's timings (every persistent config, isolated, on ResNet-50's 22 and 13 non-ResNet FP16 layers at N=32,
beside cuDNN's best plan): for each layer held out in turn, the three (BM, BN, WGS, STAGES) tiles whose fastest with
the default is the least geomean over the other layers; then that triple on the held-out layer.
    python f_alternates.py  (from the repository root)"""
import itertools
import json
import math
import sys

sys.path[:0] = [".", "tests"]
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from shapes import NON_RESNET, _resnet50  # noqa: E402

F = get_solver("ConvImplicitGemmHopperFwd")
L = {**_resnet50(32), **{k: dict(v, n=32) for k, v in NON_RESNET.items()}}
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
rows = []
for f in ("bench/results/session-epi/call1/r/f_r50.json", "bench/results/session-epi/call1/r/f_nr.json"):
    for r in json.load(open(f))["rows"]:
        p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **L[r["layer"]])
        d = F.default_config(p)
        t = {(c["cfg"]["BM"], c["cfg"]["BN"], c["cfg"]["WGS"], c["cfg"]["STAGES"]): c["us"]
             for c in r["configs"] if c["side"] == "plain"}
        dk = (d["BM"], d["BN"], d["WGS"], d["STAGES"])
        if d["PERSIST"] == 1 and dk in t:     # the default is one of the swept persistent configs
            rows.append((r["layer"], r["cudnn_us"], t, dk))
tiles = sorted({k for _, _, t, _ in rows for k in t})


def score(rr, s):
    return gm([min([t[dk]] + [t[x] for x in s if x in t]) / cu for _, cu, t, dk in rr])


print(f"{len(rows)} layers whose default is a swept persistent config; {len(tiles)} tiles")
print(f"default alone {gm([t[dk] / cu for _, cu, t, dk in rows]):.3f}, best of all {gm([min(t.values()) / cu for _, cu, t, _ in rows]):.3f}")
print("in sample, best triple:", min(itertools.combinations(tiles, 3), key=lambda s: score(rows, s)),
      f"{min(score(rows, s) for s in itertools.combinations(tiles, 3)):.3f}")
out, picks = [], {}
for i, held in enumerate(rows):
    s = min(itertools.combinations(tiles, 3), key=lambda s: score(rows[:i] + rows[i + 1:], s))
    picks[s] = picks.get(s, 0) + 1
    out.append(score([held], s))
print(f"held out in turn: {gm(out):.3f}; triples chosen: {picks}")
