"""Prototype (tried, not kept): nearest-neighbour stacking features for the cost model, leave one preset out.

Each (problem, solver) row gets today's predictor as features: on the nearest problem of the same shape class
(another layer), the solver's time over that problem's fastest, its FLOP-scaled time over the roofline, the
distance, the mean of the first over the 3 nearest, and how many of them the solver ran on. A training problem's
neighbours come from outside the held-out preset and outside its own presets (as a held-out problem's do).
Depthwise problems (outside the model's training kinds when MobileNetV2 is held out) are left out of both arms.

    python bench/results/session-check/costmodel/knn_stack.py base|knn [seed]
"""
import sys, math, time, json
from pathlib import Path
ROOT = str(Path(__file__).resolve().parents[4])
from collections import defaultdict
import numpy as np
sys.path.insert(0, ROOT); sys.path.insert(0, ROOT + "/bench")
import lightgbm as lgb
from miofind import costmodel as cm
from miofind.db import FindDB
from miofind.models import MODELS
from miofind.predict import _shape_class, _sizes, parse_problem_key
from miofind.registry import get_solver
import eval_costmodel as ev

VARIANT = sys.argv[1] if len(sys.argv) > 1 else "base"
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1
db = FindDB(ROOT + "/finddb/sm_90-132.sqlite", readonly=True, immutable=True)
samples = cm.default_config_samples(cm.samples_from_db(db))
finds = defaultdict(list)
for r in db.iter_records(None):
    finds[r.problem_key].append(r)
heldsets = {m: ev.held_out_keys(m) for m in MODELS}
tests = {m: ev.preset_keys(m) & set(finds) for m in MODELS}

keys = sorted({s.problem_key for s in samples})
P = {k: parse_problem_key(k) for k in keys}
times = defaultdict(dict)
for s in samples:
    times[s.problem_key][s.solver_id] = min(s.time_ms, times[s.problem_key].get(s.solver_id, 1e30))
member = {k: frozenset(m for m in MODELS if k in heldsets[m]) for k in keys}
def layer_id(p):
    return (p.c, p.k, p.in_size, p.filter_size, p.strides, p.pads, p.dilations, p.groups, p.direction)
lid = {k: layer_id(P[k]) for k in keys}
cls = {k: _shape_class(P[k]) for k in keys}
by_cls = defaultdict(list)
for k in keys:
    by_cls[cls[k]].append(k)
sizes = {k: np.array(_sizes(P[k])) for k in keys}
flops = {k: P[k].flops() for k in keys}

def nearest(k, allowed):
    """nearest keys of k's shape class among allowed(key) (excluding same layer), k=3"""
    cand = [q for q in by_cls[cls[k]] if q != k and lid[q] != lid[k] and allowed(q)]
    if not cand:
        return []
    d = np.abs(np.stack([sizes[q] for q in cand]) - sizes[k]).sum(1)
    o = np.argsort(d, kind="stable")[:3]
    return [(cand[i], float(d[i])) for i in o]

NK = 5
def knn_feats(k, solver_ids, allowed):
    """per solver: [log ratio to best on nearest, log flop-scaled time - (filled later), dist, mean rel of 3 nn, has]"""
    nn = nearest(k, allowed)
    out = {}
    for sid in solver_ids:
        f = [np.nan] * NK
        if nn:
            f[2] = nn[0][1]
            rels = []
            for j, (q, d) in enumerate(nn):
                tq = times[q]
                if sid in tq:
                    rel = math.log10(tq[sid] / min(tq.values()))
                    if j == 0:
                        f[0] = rel
                        f[1] = math.log10(tq[sid] * flops[k] / flops[q])
                    rels.append(rel)
            if rels:
                f[3] = float(np.mean(rels))
            f[4] = len(rels)
        out[sid] = f
    return out

shell_cache = {}
def matrix(model, smp):
    x, base, y = cm._matrix(model, smp, 132, get_solver)
    return x, base, y

results = {}
allrows = []
t0 = time.time()
for held in MODELS:
    excluded = heldsets[held]
    tr = [s for s in samples if s.problem_key not in excluded]
    solver_ids = tuple(sorted({s.solver_id for s in tr}))
    cfgkeys = list(cm.numeric_config_keys(s.config for s in tr))
    meta = {"format": 2, "solvers": list(solver_ids), "config_keys": cfgkeys, "support": [], "tile_features": False, "version": ""}
    shell = cm.CostModel(cm._Trees.empty(), meta)
    x, base, y = matrix(shell, tr)
    extra = None
    if VARIANT != "base":
        # nested: a training problem's neighbours come from problems outside held and outside its own presets
        feats = {}
        for k in {s.problem_key for s in tr}:
            own = member[k]
            feats[k] = knn_feats(k, solver_ids, lambda q, own=own: q not in excluded and not (member[q] & own))
        extra = np.array([feats[s.problem_key][s.solver_id] for s in tr])
        extra[:, 1] = extra[:, 1] - base  # relative to roofline base
        x = np.hstack([x, extra])
    params = dict(cm.PARAMS, seed=SEED)
    reg = lgb.train(params, lgb.Dataset(x, label=y - base), num_boost_round=cm.NUM_ROUNDS)
    order = sorted(range(len(tr)), key=lambda i: tr[i].problem_key)
    ks = [tr[i].problem_key for i in order]
    bounds = [0, *(i for i in range(1, len(ks)) if ks[i] != ks[i - 1]), len(ks)]
    yo = y[order]
    label = np.concatenate([cm.relevance(10.0 ** yo[a:b]) for a, b in zip(bounds, bounds[1:])])
    rk = lgb.train({**params, **cm.RANK_PARAMS}, lgb.Dataset(x[order], label=label, group=np.diff(bounds)), num_boost_round=cm.RANK_ROUNDS)
    probs = []
    for key in sorted(tests[held]):
        recs = finds[key]
        p = P.get(key) or parse_problem_key(key)
        if not all(r.solver_id in solver_ids for r in recs):
            continue
        pairs = [(get_solver(r.solver_id), cm.default_config(get_solver(r.solver_id), p)) for r in recs]
        xt, bt = shell.rows(p, pairs, 132)
        if VARIANT != "base":
            f = knn_feats(key, [r.solver_id for r in recs], lambda q: q not in excluded)
            e = np.array([f[r.solver_id] for r in recs]); e[:, 1] -= bt
            xt = np.hstack([xt, e])
        pred = 10 ** (bt + reg.predict(xt))
        sc = rk.predict(xt)
        place = {i: j for j, i in enumerate(sorted(range(len(recs)), key=lambda i: -sc[i]))}
        probs.append([(r.time_ms, pr, place[i]) for i, (r, pr) in enumerate(zip(recs, pred))])
    results[held] = cm.ranking_metrics(probs)
    allrows += probs
    print(held, {k: round(v, 4) for k, v in results[held].items()}, f"{time.time()-t0:.0f}s", flush=True)
pooled = cm.ranking_metrics(allrows)
print("POOLED", VARIANT, SEED, {k: round(v, 4) for k, v in pooled.items()})
