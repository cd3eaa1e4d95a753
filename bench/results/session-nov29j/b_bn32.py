"""Backward data's find with and without its 32-wide configs, and the best BN = 32 config, per layer of at most 32 of
dx's channels, from call7/sweep_b32.json.gz (sweep_configs.py --dir B --where "BN=32,STAGES=4|6|8" --others
ConvImplicitGemmHopperBwd): isolated kernel time over cuDNN's best plan, and the geomeans.
    python b_bn32.py call7/sweep_b32.json.gz"""
import gzip, json, math, sys

acc = []
for r in json.load(gzip.open(sys.argv[1]))["rows"]:
    cb = min(x["isolated_ms"] for x in r["cudnn"])
    oth = r["others"]["ConvImplicitGemmHopperBwd"]
    old = min(x["isolated_ms"] for x in oth if x["cfg"].get("BN") != 32) / cb
    new = min(x["isolated_ms"] for x in oth) / cb
    b32 = min((x for x in r["ours"] if x["cfg"].get("BN") == 32), key=lambda x: x["isolated_ms"])
    acc.append((old, new, min(new, b32["isolated_ms"] / cb)))
    print(f"{r['layer']:22s} cuDNN {cb * 1e3:6.1f} us  find without 32-wide {old:.3f}  with {new:.3f}  best BN = 32 "
          f"{b32['isolated_ms'] / cb:.3f} {b32['cfg']}")
g = lambda i: math.exp(sum(math.log(a[i]) for a in acc) / len(acc))  # noqa: E731
print(f"geomean over {len(acc)} layers: find without its 32-wide configs {g(0):.3f}, with them {g(1):.3f}, best of the "
      f"find and every BN = 32 config {g(2):.3f}")
