"""Quick LOPO screen of LightGBM parameter variants (model only, no today's predictor)."""
import json, sys, time, itertools
from collections import defaultdict
sys.path.insert(0, "/work/main"); sys.path.insert(0, "/work/main/bench")
import numpy as np
from miofind import costmodel as cm
from miofind.db import FindDB
from miofind.registry import get_solver
import eval_costmodel as ev

SPLITS = ["resnet50", "vgg16", "mobilenet_v2", "inception_v3", "unet"]
db = FindDB("/work/main/finddb/sm_90-132.sqlite", readonly=True, immutable=True)
samples = cm.samples_from_db(db)
finds = defaultdict(list)
for r in db.iter_records(None):
    finds[r.problem_key].append(r)
presets = {m: ev.preset_keys(m) & set(finds) for m in SPLITS}
excl = {m: ev.held_out_keys(m) for m in SPLITS}
# the test rows' pairs, once
cases = {}
for m in SPLITS:
    lst = []
    for key in sorted(presets[m]):
        recs = finds[key]
        p = cm.parse_problem_key(key)
        sol = [get_solver(r.solver_id) for r in recs]
        lst.append((key, p, recs, [(s, cm.default_config(s, p)) for s in sol]))
    cases[m] = lst

def run(params=None, rounds=cm.NUM_ROUNDS, rank_rounds=cm.RANK_ROUNDS, rank_params=None, labels="bands", splits=SPLITS, tag=""):
    allp = []
    per = {}
    for m in splits:
        tr = [s for s in samples if s.problem_key not in excl[m]]
        model = cm.train(tr, rounds=rounds, rank_rounds=rank_rounds, params=params or {}, rank_params=rank_params or {},
                         rank_labels=labels, default_configs=True)
        probs = []
        for key, p, recs, pairs in cases[m]:
            if model.supports(p, [s.id for s, _ in pairs]):
                mine, order = model.rank(p, pairs, 132)
                place = {i: j for j, i in enumerate(order)}
                probs.append([(r.time_ms, mi, place[i]) for i, (r, mi) in enumerate(zip(recs, mine))])
            else:
                probs.append(None)
        per[m] = probs
    # pooled as eval_costmodel (resnet counted twice), fallback problems scored as 'today' would: skip (count separately)
    pooled = []
    for m in splits:
        ps = [q for q in per[m] if q is not None]
        pooled += ps * (2 if m == "resnet50" else 1)
    met = cm.ranking_metrics(pooled)
    out = {"tag": tag, "params": params, "rounds": rounds, "rank_rounds": rank_rounds, "rank_params": rank_params, "labels": labels,
           "pooled_model_answered": met, "per": {m: cm.ranking_metrics([q for q in per[m] if q is not None]) for m in splits}}
    print(json.dumps(out), flush=True)
    return out

if __name__ == "__main__":
    variants = json.loads(sys.argv[1])
    for v in variants:
        t0 = time.time(); run(**v); print("# %.0f s" % (time.time() - t0), flush=True)
