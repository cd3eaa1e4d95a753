"""What the rounding TF32 solvers' default rule and find configs (ConvImplicitGemmHopper{Fwd,Bwd}Tf32Rn.default_config,
.alternatives, written from this sweep) give on call 5's sweeps of every config, ResNet-50 N=32 NHWC: per layer the best
time of the rule's tile (any stage count), of the find's configs, and of every config, over cuDNN's best plan; geomeans.
In-sample: the rule was read off these measurements.

    PYTHONPATH=. python bench/results/session-nov28d/call5/rule.py     (CPU)
"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, "tests")
from miofind.solvers import implicit_gemm_hopper_base as hb  # noqa: E402

hb.device_arch = lambda: None
import shapes  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

HERE = Path(__file__).parent
for d, fn, sid in (("F", "sweep_f.json", "ConvImplicitGemmHopperFwdTf32Rn"), ("B", "sweep_b.json", "ConvImplicitGemmHopperBwdTf32Rn")):
    s = get_solver(sid)
    logs = {"rule's tile": [], "find's configs": [], "every config": []}
    for r in json.loads((HERE / "r" / fn).read_text())["rows"]:
        if not r["ours"]:
            continue
        cud = min(x["isolated_ms"] for x in r["cudnn"])
        p = ProblemDescription.make(d, layout="NHWC", dtype="FP32", math="tf32", **shapes._resnet50(32)[r["layer"]])

        def tile_best(c):
            return min(x["isolated_ms"] for x in r["ours"] if all(x["cfg"][k] == c[k] for k in ("WG_M", "BN", "WN", "CW")))
        fc = [s.default_config(p)] + s.alternatives(p)
        got = (tile_best(fc[0]), min(tile_best(c) for c in fc), min(x["isolated_ms"] for x in r["ours"]))
        print(f"{d} {r['layer']:26s} " + "  ".join(f"{k} {v / cud:.3f}" for k, v in zip(logs, got)))
        for k, v in zip(logs, got):
            logs[k].append(math.log(v / cud))
    print(f"{d} geomean over {len(logs['every config'])} layers: " +
          ", ".join(f"{k} {math.exp(sum(v) / len(v)):.3f}" for k, v in logs.items()))
