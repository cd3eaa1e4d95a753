"""Backward data's find with and without its 32-deep (TMA = 2) alternates, and the best TMA = 2 config, per layer of
PADDED_C with dy's K % 64 != 0, from call4/sweep_b.json.gz (sweep_configs.py --dir B ... --others
ConvImplicitGemmHopperBwd): isolated kernel time over cuDNN's best plan; the geomeans over all 30 layers.
    python b_row64.py call4/sweep_b.json.gz"""
import gzip, json, math, sys

rows = json.load(gzip.open(sys.argv[1]))["rows"]
acc = []
for r in rows:
    cb = min(x["isolated_ms"] for x in r["cudnn"])
    oth = r["others"]["ConvImplicitGemmHopperBwd"]
    old = min(x["isolated_ms"] for x in oth if x["cfg"].get("TMA") != 2) / cb
    new = min(x["isolated_ms"] for x in oth) / cb
    deep = [x["isolated_ms"] / cb for x in r["ours"] if x["cfg"].get("TMA") == 2]
    best = min([new] + deep)
    acc.append((old, new, best))
    if deep:
        print(f"{r['layer']:24s} cuDNN {cb * 1e3:6.1f} us  find without {old:.3f}  with {new:.3f}  best TMA = 2 "
              f"{min(deep):.3f}")
g = lambda i: math.exp(sum(math.log(a[i]) for a in acc) / len(acc))  # noqa: E731
print(f"geomean over {len(acc)} layers: find without the 32-deep alternates {g(0):.3f}, with them {g(1):.3f}, "
      f"best of the find and every TMA = 2 config {g(2):.3f}")
