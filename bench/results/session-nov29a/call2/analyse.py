"""Per layer, from call 2's sweeps: cuDNN's best TF32 plan, ConvImplicitGemmHopperWrwTf32Rn at its default, at its find
configs (default + alternates, as the solver lists them now) and at the best swept config, and the other own solvers;
geomeans against cuDNN (isolated time). Usage: python analyse.py r/sweep_r50.json [r/sweep_nr.json ...]"""
import json
import math
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_base as hb  # noqa: E402

hb.device_arch = lambda: None
S = get_solver("ConvImplicitGemmHopperWrwTf32Rn")
M = "isolated_ms"


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


for f in sys.argv[1:]:
    rows = json.load(open(f))["rows"]
    print(f"== {f}")
    cols = {k: [] for k in ("default", "find", "best", "own_other", "own_best_find", "own_best")}
    wins = Counter()
    for r in rows:
        if not r["ours"] or not r["cudnn"]:
            continue
        p = ProblemDescription.from_key(r["key"])
        cb = min(x[M] for x in r["cudnn"])
        t = {json.dumps(x["cfg"], sort_keys=True): x[M] for x in r["ours"]}
        d = next(x for x in r["ours"] if x["cfg"] == S.default_config(p))     # the solver's default as it is now
        fc = [d["cfg"]] + S.alternatives(p)
        tf = [t[json.dumps(c, sort_keys=True)] for c in fc if json.dumps(c, sort_keys=True) in t]
        best = min(r["ours"], key=lambda x: x[M])
        oth = [x[M] for v in r["others"].values() for x in v]
        cols["default"].append(d[M] / cb)
        cols["find"].append(min(tf) / cb)
        cols["best"].append(best[M] / cb)
        if oth:
            cols["own_other"].append(min(oth) / cb)
        cols["own_best_find"].append(min([min(tf)] + oth) / cb)
        cols["own_best"].append(min([best[M]] + oth) / cb)
        wins[(best["cfg"]["WG_M"], best["cfg"]["BN"], best["cfg"]["STAGES"])] += 1
        print(f"{r['layer']:<28} cuDNN {cb * 1e3:8.1f} us  default {d[M] / cb:.3f}  find {min(tf) / cb:.3f}  "
              f"best {best[M] / cb:.3f} {best['cfg']}  others {min(oth) / cb if oth else float('nan'):.3f}")
    print("geomean / cuDNN: " + ", ".join(f"{k} {gm(v):.3f} ({len(v)})" for k, v in cols.items()))
    print("best tiles:", dict(wins))
