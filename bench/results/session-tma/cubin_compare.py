"""Cubins of every stored Hopper F/B/W config (shipped DB records and tuned configs), built from TREE; SOLVERS
(comma-separated ids, default the three) narrows the solvers."""
import sys, hashlib, sqlite3, json, os
sys.path.insert(0, os.environ["TREE"])
from miofind.problem import ProblemDescription as P
from miofind.registry import get_solver
from miofind.compile import nvrtc_compile
db = sqlite3.connect("file:/work/main/finddb/sm_90-132.sqlite?mode=ro", uri=True)
ids = tuple(os.environ.get('SOLVERS', 'ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperBwd,ConvImplicitGemmHopperWrw').split(','))
q = ",".join("?" * len(ids))
rows = db.execute(f"select problem_key, solver_id, config from find_records where solver_id in ({q}) union "
                  f"select problem_key, solver_id, config from perf_records where solver_id in ({q})", ids + ids).fetchall()
seen = {}
for key, sid, cfg in rows:
    c = json.loads(cfg) if cfg else None
    seen.setdefault((sid, json.dumps(c, sort_keys=True), key.split("-")[-2]), (key, sid, c))
part, nparts = int(sys.argv[1]), int(sys.argv[2])
res = {}
for i, (key, sid, c) in enumerate(sorted(seen.values(), key=str)):
    if i % nparts != part:
        continue
    s = get_solver(sid); p = P.from_key(key)
    for k in s.get_solution(p, c).kernels:
        res[f"{key}|{sid}|{json.dumps(c, sort_keys=True)}|{k.name}"] = hashlib.sha1(nvrtc_compile(k, arch="sm_90")).hexdigest()[:16]
json.dump(res, open(f"/tmp/cubins/{os.environ['WHICH']}_{part}.json", "w"), indent=0)
print(len(seen), "distinct", len(res), "kernels")
