"""What a model-guided deferral would have left out of call 1's ResNet-50 first-step finds: per K, the solvers the shipped
cost model predicts at least K x slower than its predicted fastest, the compile + verify + timing ms of their candidates
(plus the find's cuDNN configs time where the cuDNN solver is one), and the finds whose measured fastest would have been
among them. "roof" rows use the per-solver roofline instead of the learned model.

    tar xzf bench/results/session-step/call1/r1.tgz -C /tmp
    python bench/results/session-step/predict-defer/sim_defer.py /tmp/r1/fb-fp32/find_breakdown.json /tmp/r1/fb-amp/find_breakdown.json
"""
import json, sys, math, collections
from miofind.costmodel import model_for_db, default_config
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from pathlib import Path
from miofind.predict import model_time_ms
m = model_for_db(Path("finddb/sm_90-132.sqlite"))
print("model", m.version, m.config_basis)
for path in sys.argv[1:]:
    d = json.load(open(path))
    rows = []
    for f in d["finds"]:
        p = ProblemDescription.from_key(f["key"]); t = f["timing"]
        by = collections.defaultdict(lambda: {"cost": 0.0, "best": math.inf})
        for c in t.get("candidates", []):
            b = by[c["solver_id"]]
            b["cost"] += c["compile_ms"] + c["verify_ms"] + c["timing_ms"]
            if not c["cut"]:
                b["best"] = min(b["best"], c["time_ms"])
        sids = list(by)
        sols = [get_solver(s) for s in sids]
        pairs = [(s, default_config(s, p)) for s in sols]
        pred = m.predict_ms(p, pairs) if m.supports(p, sids) else [model_time_ms(p, s) for s in sols]
        roof = [model_time_ms(p, s) for s in sols]
        rows.append((f["key"], sids, [by[s]["cost"] for s in sids], [by[s]["best"] for s in sids], pred, roof, t.get("configs_ms", 0), m.supports(p, sids)))
    print(path, "finds", len(rows), "unsupported", sum(1 for r in rows if not r[7]))
    for use in ("model", "roof"):
        for K in (1.5, 2, 3, 5):
            saved = 0.0; lost = []; ndef = 0
            for key, sids, cost, best, pred, roof, cfgms, _ in rows:
                pr = pred if use == "model" else roof
                pmin = min(pr)
                tbest = min(best)
                keep_best = math.inf
                for s, c, b, q in zip(sids, cost, best, pr):
                    if q > K * pmin:
                        ndef += 1; saved += c
                        if s.startswith("ConvCudnn"): saved += cfgms
                    else:
                        keep_best = min(keep_best, b)
                if keep_best > tbest * 1.001:
                    lost.append(keep_best / tbest)
            g = math.exp(sum(math.log(x) for x in lost) / len(lost)) if lost else 1
            print(f"  {use} K={K}: deferred {ndef} solver-finds, saved {saved/1e3:.2f} s; winner postponed in {len(lost)} finds "
                  f"(geomean {g:.3f}x, worst {max(lost, default=1):.2f}x)")
