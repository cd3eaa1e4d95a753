"""Build cost of cuDNN plans through the frontend's graph against NativePlans through the backend API, per plan.

    python3 plan_build_ab.py ARM OUT.json [model] [limit]     # ARM: frontend | native

One process per arm. For each cuDNN problem of the model (batch 32, FP16 NHWC, F/B/W, those that replay natively):
the heuristics' graph (timed), then its first two plans built (each timed), as a find builds them now.
"""
import json
import sys
import time

from miofind.models import model_problems
from miofind.solvers import cudnn_base

arm, out = sys.argv[1], sys.argv[2]
model = sys.argv[3] if len(sys.argv) > 3 else "mobilenet_v2"
limit = int(sys.argv[4]) if len(sys.argv) > 4 else 2
probs = [p for p in model_problems(model, batch=32, dtypes=("FP16",), layouts=("NHWC",), directions=("F", "B", "W"))]
probs = [p.as_conv() for p in probs if cudnn_base.replays_natively(p)]
dev = cudnn_base._device_id()
import cupy  # noqa: E402
cupy.cuda.runtime.free(cupy.cuda.runtime.malloc(1))
rows, t_all = [], time.perf_counter()
for p in probs:
    t0 = time.perf_counter()
    g = cudnn_base.PlanGraph(p, dev, native=(arm == "native"))
    heur = time.perf_counter() - t0
    for pl in g.plans[:limit]:
        t0 = time.perf_counter()
        g.build(pl)
        rows.append({"key": p.key(), "plan": pl.name, "ms": (time.perf_counter() - t0) * 1e3, "heur_ms": heur * 1e3,
                     "usable": pl.usable, "native": pl.native is not None, "reason": pl.reason[:120]})
total = (time.perf_counter() - t_all) * 1e3
json.dump({"arm": arm, "model": model, "total_ms": total, "rows": rows}, open(out, "w"), indent=0)
print(f"{arm}: {len(probs)} problems, {len(rows)} plans, builds {sum(r['ms'] for r in rows):.0f} ms, "
      f"native {sum(r['native'] for r in rows)}, total {total:.0f} ms")
