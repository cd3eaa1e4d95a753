"""Own best / cuDNN's best (geomean over ResNet-50's 23 N=32 NHWC problems of each data type and direction) from the
verified find records of each FindDB file given, with and without ConvImplicitGemmHopperFwdTmaStore, and in how many
problems it is the own best.
python3 ratios.py DB [DB ...]"""
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
from miofind.models import model_problems  # noqa: E402

TS = "ConvImplicitGemmHopperFwdTmaStore"
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan  # noqa: E731

for f in sys.argv[1:]:
    c = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
    for dt in ("FP16", "BF16"):
        keys = list(dict.fromkeys(p.key() for p in model_problems("resnet50", batch=32, dtypes=(dt,), layouts=("NHWC",))))
        for d in "FBW":
            with_ts, without, wins, n = [], [], 0, 0
            for k in (k for k in keys if k.endswith("-" + d)):
                rows = c.execute("select solver_id, time_ms from find_records where problem_key=? and verified=1",
                                 (k,)).fetchall()
                cud = [t for s, t in rows if s.startswith("ConvCudnn")]
                own = sorted((t, s) for s, t in rows if not s.startswith(("ConvCudnn", "ConvDirectNaive")))
                rest = [t for t, s in own if s != TS]
                if not cud or not own:
                    continue
                n += 1
                with_ts.append(own[0][0] / min(cud))
                without.append(min(rest) / min(cud) if rest else math.inf)
                wins += own[0][1] == TS
            print(f"{os.path.basename(f)} {dt} {d}: {n} problems, own best / cuDNN {g(with_ts):.3f} "
                  f"(without {TS}: {g(without):.3f}; it is the own best in {wins})")
