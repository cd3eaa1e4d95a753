"""Session nov30c call 2: the forward's 192-wide tiles (BN = 192) on the 10 layers whose N is a multiple of 192, isolated
kernel time (the median of three interleaved passes) against cuDNN's best plan: the best of the forward's find configs
without its 192-wide twins, with them, and with every BN = 192 config of the space; and the copy-engine store beside
them (the best own of the two Hopper forwards). Usage: python wide.py"""
import gzip
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
cols = {k: [] for k in ("find before", "find with twins", "every BN=192", "store", "both before", "both after")}
for s in ("nonresnet", "padded"):
    for row in json.load(gzip.open(HERE / f"sweep_{s}.json.gz"))["rows"]:
        cud = min(r["isolated_ms"] for r in row["cudnn"])
        fnd = row["others"]["ConvImplicitGemmHopperFwd"]
        st = row["others"].get("ConvImplicitGemmHopperFwdTmaStore") or []
        before = min(r["isolated_ms"] for r in fnd if r["cfg"]["BN"] != 192)
        after = min(r["isolated_ms"] for r in fnd)
        every = min([after] + [r["isolated_ms"] for r in row["ours"]])
        store = min((r["isolated_ms"] for r in st), default=math.inf)
        best192 = min(row["ours"] + [r for r in fnd if r["cfg"]["BN"] == 192], key=lambda r: r["isolated_ms"])
        vals = (before / cud, after / cud, every / cud, store / cud, min(before, store) / cud, min(after, store) / cud)
        for k, v in zip(cols, vals):
            cols[k].append(v)
        c = best192["cfg"]
        print(f"{row['layer']:24s} cuDNN {cud * 1e3:6.1f} us  " + "  ".join(f"{v:.3f}" for v in vals)
              + f"   best 192: {c['BM']}x192 WGS {c['WGS']} ST {c['STAGES']} P {c['PERSIST']} TMA {c['TMA']}"
              f" SK {c['SPLITK']} {best192['isolated_ms'] / cud:.3f}")
print("geomean " + "  ".join(f"{k} {gm(v):.3f}" for k, v in cols.items() if v and all(map(math.isfinite, v))))
