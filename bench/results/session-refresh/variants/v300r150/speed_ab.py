"""Interleaved answer-time A/B of the shipped cost model against a candidate model file (argv[1]): 1500 shipped-DB
problems in a seeded order, each answered 3 times by each model in ABBAAB order; the median over problems of each
problem's fastest answer. Run from the repo root: python bench/results/session-refresh/variants/v300r150/speed_ab.py FILE"""
import sys, time, random
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
from bench_costmodel_speed import default_config
from miofind import costmodel as cm
from miofind.db import FindDB
from miofind.registry import get_solver
from miofind.problem import ProblemDescription
db = FindDB("finddb/sm_90-132.sqlite", readonly=True, immutable=True)
shipped = cm.model_for_db("finddb/sm_90-132.sqlite")
small = cm.CostModel.load(sys.argv[1])
probs = {}
for r in db.iter_records(None):
    probs.setdefault(r.problem_key, []).append(r.solver_id)
cases = []
for k, sids in probs.items():
    p = ProblemDescription.from_key(k)
    cases.append((p, [(get_solver(s), default_config(get_solver(s), p)) for s in sids]))
random.Random(1).shuffle(cases); cases = cases[:1500]
for m in (shipped, small):
    for p, pairs in cases: m.rank(p, pairs)
res = {0: [], 1: []}
for p, pairs in cases:
    for i, m in ((0, shipped), (1, small), (1, small), (0, shipped), (0, shipped), (1, small)):
        t0 = time.perf_counter(); m.rank(p, pairs); res[i].append((time.perf_counter() - t0, p))
import statistics
for i, name in ((0, "shipped"), (1, "candidate")):
    per = {}
    for t, p in res[i]:
        per[id(p)] = min(per.get(id(p), 1e9), t)
    v = sorted(per.values()); print(name, "median of per-problem best us", round(v[len(v)//2] * 1e6, 1), "trees", len(( shipped if i==0 else small).trees.roots))
