"""What a find of ConvImplicitGemmHopperFwd reaches with and without its resident-B twins (PERSIST = 2), per layer of
a sweep_configs.py --others run: the best of its find configs without the twins, with them, over cuDNN's best plan.
    python twins_find.py call2/find_*.json; SID=ConvImplicitGemmHopperBwd python twins_find.py call4/find_*.json"""
import json, math, sys

import os
SID = os.environ.get("SID", "ConvImplicitGemmHopperFwd")
for f in sys.argv[1:]:
    d = json.load(open(f))
    print(f"\n{f}")
    for m in ("isolated_ms", "gpu_ms"):
        lw, lo, n_won = [], [], 0
        for row in d["rows"]:
            rs = row["others"].get(SID) or []
            if not rs or not row["cudnn"]:
                continue
            cud = min(r[m] for r in row["cudnn"])
            without = min(r[m] for r in rs if r["cfg"]["PERSIST"] != 2)
            withw = min(r[m] for r in rs)
            lo.append(math.log(without / cud)); lw.append(math.log(withw / cud))
            if withw < without:
                n_won += 1
            if m == "isolated_ms" and any(r["cfg"]["PERSIST"] == 2 for r in rs):
                print(f"  {row['layer']:28s} without {without / cud:.3f}  with {withw / cud:.3f}  ({withw / without:.3f})")
        print(f"  geomean {m[:-3]} / cuDNN: without twins {math.exp(sum(lo) / len(lo)):.3f}, with "
              f"{math.exp(sum(lw) / len(lw)):.3f} ({len(lw)} layers; twins fastest on {n_won})")
