"""Session epi, call 13: ResNet-50 N=32's tuned Hopper records over cuDNN's, before and after the re-tune (find timing:
the records' device times; the cuDNN records from earlier hosts, so not a same-run ratio).
    python tuned_ratio.py BEFORE.sqlite AFTER.sqlite"""
import json
import math
import sqlite3
import sys

gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
for sid, cud in (("ConvImplicitGemmHopperFwd", "ConvCudnnFwd"), ("ConvImplicitGemmHopperBwd", "ConvCudnnBwd"),
                 ("ConvImplicitGemmHopperWrw", "ConvCudnnWrw")):
    out = []
    for path in sys.argv[1:3]:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        pr = {k: c for k, c in db.execute("select problem_key, config from perf_records where solver_id = ?", (sid,))}
        fr = {k: t for k, t in db.execute("select problem_key, time_ms from find_records where solver_id = ?", (sid,))}
        cu = {k: t for k, t in db.execute("select problem_key, time_ms from find_records where solver_id = ?", (cud,))}
        row = []
        for dt in ("FP16", "BF16"):
            ks = [k for k in pr if k in fr and k in cu and dt in k]
            row.append(f"{dt} {gm([fr[k] / cu[k] for k in ks]):.3f} ({len(ks)})")
        out.append(", ".join(row))
    print(f"{sid}: before {out[0]}; after {out[1]}")
