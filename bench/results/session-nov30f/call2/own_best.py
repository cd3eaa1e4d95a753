"""Call 2's sweep (sweep_st8.json): per ResNet-50 W layer, own best (Hopper W's find and stored configs, the GEMM
solvers') over cuDNN's best plan, without and with the Hopper W configs' 8-stage twins; isolated and back to back.

    python own_best.py sweep_st8.json.gz
"""
import gzip
import json
import math
import sys

rows = json.load(gzip.open(sys.argv[1]))["rows"]
for m in ("isolated_ms", "gpu_ms"):
    lo, hi = [], []
    print(f"\n{m[:-3]}: layer, cuDNN us, own best / cuDNN without -> with the 8-stage twins, the winner with them")
    for r in rows:
        cud = min(e[m] for e in r["cudnn"])
        cands = [(e[m], oid, e["cfg"]) for oid, es in r["others"].items() for e in es]
        plain = [c for c in cands if not (c[1] == "ConvImplicitGemmHopperWrw" and c[2].get("STAGES") == 8)]
        b0, b1 = min(plain, key=lambda c: c[0]), min(cands, key=lambda c: c[0])
        lo.append(math.log(b0[0] / cud)), hi.append(math.log(b1[0] / cud))
        print(f"  {r['layer']:28s} {cud * 1e3:7.1f}  {b0[0] / cud:.3f} -> {b1[0] / cud:.3f}  {b1[1]} {b1[2]}")
    print(f"geomean own best / cuDNN, {m[:-3]}: {math.exp(sum(lo) / len(lo)):.3f} -> {math.exp(sum(hi) / len(hi)):.3f}"
          f" ({len(lo)} layers)")
