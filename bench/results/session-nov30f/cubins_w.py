"""Cubins of the Hopper W solvers (implicit_gemm_hopper_wrw.cu) built from TREE (NVRTC for sm_90, no GPU), before and
after the multicast pairs (MC = 2, session nov30f): every distinct (solver, config, dtype) of the shipped DB's
ConvImplicitGemmHopperWrw find records and tuned configs, and the find configs (default and alternates) of the NHWC and
NCHW W on ResNet-50's layers at N = 32, FP16. Writes /tmp/cubins/w_<WHICH>_<part>.json: kernel -> sha1 of its cubin.

    TREE=<tree> WHICH=before|after python cubins_w.py PART NPARTS
"""
import hashlib
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.environ["TREE"])
from miofind.compile import nvrtc_compile  # noqa: E402
from miofind.models import model_problems  # noqa: E402
from miofind.problem import ProblemDescription as P  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_base as hb  # noqa: E402

hb.device_arch = lambda: None
db = sqlite3.connect("file:/work/main/finddb/sm_90-132.sqlite?mode=ro", uri=True)
sid0 = "ConvImplicitGemmHopperWrw"
rows = db.execute("select problem_key, solver_id, config from find_records where solver_id = ? union "
                  "select problem_key, solver_id, config from perf_records where solver_id = ?", (sid0, sid0)).fetchall()
seen = {}
for key, sid, cfg in rows:
    c = json.loads(cfg) if cfg else None
    seen.setdefault((sid, json.dumps(c, sort_keys=True), key.split("-")[-2]), (key, sid, c))
for sid, lay in ((sid0, "NHWC"), ("ConvImplicitGemmHopperWrwNchw", "NCHW")):
    s = get_solver(sid)
    for p in model_problems("resnet50", batch=32, dtypes=("FP16",), layouts=(lay,), directions="W"):
        if not s.applicability(p):
            continue
        for c in s.find_configs(p):
            c = c and {k: v for k, v in c.items() if k != "MC"}      # as both trees write it (MC = 1 is the legacy default)
            seen.setdefault((sid, json.dumps(c, sort_keys=True), p.key()), (p.key(), sid, c))
part, nparts = int(sys.argv[1]), int(sys.argv[2])
res = {}
for i, (key, sid, c) in enumerate(sorted(seen.values(), key=str)):
    if i % nparts != part:
        continue
    s = get_solver(sid)
    for k in s.get_solution(P.from_key(key), c).kernels:
        cubin = nvrtc_compile(k, arch="sm_90")
        res[f"{key}|{sid}|{json.dumps(c, sort_keys=True)}|{k.name}"] = hashlib.sha1(cubin).hexdigest()[:16]
json.dump(res, open(f"/tmp/cubins/w_{os.environ['WHICH']}_{part}.json", "w"), indent=0)
print(len(seen), "distinct", len(res), "kernels")
