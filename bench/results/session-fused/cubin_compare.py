"""Cubins of shipped Hopper F/B configs: before vs after the EPI edit (EPI=0 builds)."""
import sys, hashlib, sqlite3, json, random, shutil, os
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
from miofind.problem import ProblemDescription as P
from miofind.registry import get_solver
from miofind.compile import nvrtc_compile
db = sqlite3.connect("/work/main/finddb/sm_90-132.sqlite")
rows = db.execute("select problem_key, solver_id, config from find_records where solver_id in ('ConvImplicitGemmHopperFwd','ConvImplicitGemmHopperBwd') union select problem_key, solver_id, config from perf_records where solver_id in ('ConvImplicitGemmHopperFwd','ConvImplicitGemmHopperBwd')").fetchall()
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
seen = {}
for key, sid, cfg in rows:
    c = json.loads(cfg) if cfg else None
    sig = (sid, tuple(sorted((c or {}).items())), "SPLIT" )
    seen.setdefault(sig, []).append((key, sid, c))
picks = [random.choice(v) for v in seen.values()]
random.shuffle(picks)
n = int(sys.argv[1])
picks = picks[:n]
out = []
for key, sid, c in picks:
    s = get_solver(sid); p = P.from_key(key)
    for k in s.get_solution(p, c).kernels:
        out.append((key, sid, c, k))
print(len(seen), "distinct configs;", len(out), "kernels", file=sys.stderr)
res = {}
which = os.environ["WHICH"]
for key, sid, c, k in out:
    h = hashlib.sha1(nvrtc_compile(k, arch="sm_90")).hexdigest()[:16]
    res[f"{key}|{sid}|{json.dumps(c, sort_keys=True)}|{k.name}"] = h
json.dump(res, open(f"/tmp/epi/{which}.json", "w"), indent=0)   # /tmp/epi must exist
