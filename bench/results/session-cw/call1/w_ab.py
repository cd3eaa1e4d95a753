"""W per layer, before (HEAD 9649cb0's kernel) and after, same run: the Hopper W solver's fastest over its find/DB
configs and the 4-stage copy-engine cluster configs (clusters of 2, 4, 8; after: also with SPLITK), cuBLAS's GEMM,
and own best (both) / cuDNN's best plan, isolated; after's fastest config. python3 w_ab.py r/sweep_W_old.json r/sweep_W_new.json"""
import json, math, sys

def times(row):
    cb = min(r["isolated_ms"] for r in row["cudnn"])
    hop = [r for r in row["ours"] + row["others"]["ConvImplicitGemmHopperWrw"]]
    h = min(hop, key=lambda r: r["isolated_ms"])
    g = [r["isolated_ms"] for r in row["others"].get("GemmWrw1x1_stride1", [])]
    return cb, h, min(g) if g else math.inf

old, new = (json.load(open(p))["rows"] for p in sys.argv[1:3])
acc = {k: [] for k in ("h0", "h1", "b0", "b1")}
print(f"{'layer':26s} {'Hopper: old':>11s} {'new':>6s}  {'own best: old':>13s} {'new':>6s}  cuDNN us  new fastest Hopper config")
for o in old:
    n = next((r for r in new if r["layer"] == o["layer"]), None)
    if not n:
        continue
    c0, h0, g0 = times(o)
    c1, h1, g1 = times(n)
    v = (h0["isolated_ms"] / c0, h1["isolated_ms"] / c1, min(h0["isolated_ms"], g0) / c0, min(h1["isolated_ms"], g1) / c1)
    for k, x in zip(acc, v):
        acc[k].append(math.log(x))
    c = h1["cfg"]
    print(f"{o['layer']:26s} {v[0]:11.3f} {v[1]:6.3f}  {v[2]:13.3f} {v[3]:6.3f}  {c1 * 1e3:7.1f}   "
          f"{c['BM']}x{c['BN']}/{c['WGS']} s{c['STAGES']} split {c['SPLITK']} cluster {c['CLUSTER']}")
g = {k: math.exp(sum(v) / len(v)) for k, v in acc.items()}
print(f"{'geomean':26s} {g['h0']:11.3f} {g['h1']:6.3f}  {g['b0']:13.3f} {g['b1']:6.3f}  ({len(acc['h0'])} layers)")
