"""Session nov29e, call 2: from out/ab_resnet50.json.gz (tstore_ab.py), ConvImplicitGemmHopperFwdTmaStore's OBUF 2 /
OBUF 1 at the same tile, and its time / the forward kernel's at the same tile by layer kind (isolated kernel time).
Usage: python obuf.py > out/obuf.txt"""
import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

d = json.load(gzip.open(Path(__file__).resolve().parent / "out" / "ab_resnet50.json.gz"))
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
print("ConvImplicitGemmHopperFwdTmaStore, OBUF 2 / OBUF 1 at the same tile (isolated kernel time), per ResNet-50 FP16 F "
      "layer (call 2's ab_resnet50.json)")
allr = []
for row in d["rows"]:
    by = defaultdict(dict)
    for r in row["tstore"]:
        c = dict(r["cfg"])
        ob = c.pop("OBUF")
        by[json.dumps(c, sort_keys=True)][ob] = r["isolated_ms"]
    rs = [v[2] / v[1] for v in by.values() if 1 in v and 2 in v]
    if rs:
        print(f"{row['layer']}: {g(rs):.3f} over {len(rs)} tiles")
        allr += rs
print(f"all: {g(allr):.3f} over {len(allr)} tiles")
print("copy-engine stores / the forward kernel at the same tile, by layer kind:")
cls = defaultdict(list)
for row in d["rows"]:
    fw = {json.dumps(r["cfg"], sort_keys=True): r for r in row["fwd_tiles"]}
    kind = "1x1 stride 1" if "1x1s1" in row["layer"] else ("3x3" if "3x3" in row["layer"] else "1x1 stride 2")
    for t in row["tstore"]:
        f = fw.get(json.dumps({k: v for k, v in t["cfg"].items() if k != "OBUF"}, sort_keys=True))
        if f:
            cls[kind].append(t["isolated_ms"] / f["isolated_ms"])
for k, v in cls.items():
    print(f"  {k}: {g(v):.3f} over {len(v)} pairs (min {min(v):.3f}, max {max(v):.3f})")
