"""Session nov30c call 3: the copy-engine store's 192-wide tiles on the 10 layers whose N is a multiple of 192, isolated
kernel time (median of three interleaved passes) against cuDNN's best plan: the best of the store's find configs
without / with its 192-wide twins, with every BN = 192 config of its space, and the best of both Hopper forwards'
find configs without / with the twins. Usage: python wide_store.py"""
import gzip
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
cols = {k: [] for k in ("store before", "store with twins", "store every 192", "both before", "both after")}
for s in ("nonresnet", "padded"):
    for row in json.load(gzip.open(HERE / f"sweep_{s}.json.gz"))["rows"]:
        cud = min(r["isolated_ms"] for r in row["cudnn"])
        fnd = row["others"]["ConvImplicitGemmHopperFwd"]
        st = row["others"]["ConvImplicitGemmHopperFwdTmaStore"]
        mn = lambda rs: min((r["isolated_ms"] for r in rs), default=math.inf)  # noqa: E731
        narrow = lambda rs: [r for r in rs if r["cfg"]["BN"] != 192]  # noqa: E731
        vals = (mn(narrow(st)), mn(st), min(mn(st), mn(row["ours"])), min(mn(narrow(st)), mn(narrow(fnd))),
                min(mn(st), mn(fnd)))
        vals = tuple(v / cud for v in vals)
        for k, v in zip(cols, vals):
            cols[k].append(v)
        print(f"{row['layer']:24s} cuDNN {cud * 1e3:6.1f} us  " + "  ".join(f"{v:.3f}" for v in vals))
print("geomean " + "  ".join(f"{k} {gm(v):.3f}" for k, v in cols.items()))
