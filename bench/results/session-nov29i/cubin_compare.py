"""Cubins of the Hopper solvers whose source digest the padded copy-engine K tiles moved, built from TREE (NVRTC for
sm_90, no GPU): every distinct (solver, config, dtype) of the shipped DB's ConvImplicitGemmHopperFwd/Bwd find records
and tuned configs, and for the solvers without shipped records that share implicit_gemm_hopper_fwd.cu (the fused
forward, the copy-engine-store forward, the NCHW wrappers, the TF32 backward data) their default config and first two
alternates on ResNet-50's layers at N = 32 (FP16, or FP32 with TF32 math for the TF32 solver; NCHW for the wrappers).
Writes /tmp/cubins/<WHICH>_<part>.json: kernel -> sha1 of its cubin.

    TREE=<tree> WHICH=before|after python cubin_compare.py PART NPARTS
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
ids = ("ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwd")
rows = db.execute("select problem_key, solver_id, config from find_records where solver_id in (?, ?) union "
                  "select problem_key, solver_id, config from perf_records where solver_id in (?, ?)",
                  ids + ids).fetchall()
seen = {}
for key, sid, cfg in rows:
    c = json.loads(cfg) if cfg else None
    seen.setdefault((sid, json.dumps(c, sort_keys=True), key.split("-")[-2]), (key, sid, c))
others = {"ConvImplicitGemmHopperFwdBiasActiv": ("F", "FP16", "NHWC"),
          "ConvImplicitGemmHopperFwdTmaStore": ("F", "FP16", "NHWC"),
          "ConvImplicitGemmHopperFwdNchw": ("F", "FP16", "NCHW"),
          "ConvImplicitGemmHopperBwdNchw": ("B", "FP16", "NCHW"),
          "ConvImplicitGemmHopperBwdTf32": ("B", "FP32", "NHWC")}
for sid, (d, dt, lay) in others.items():
    s = get_solver(sid)
    for p in model_problems("resnet50", batch=32, dtypes=(dt,), layouts=(lay,), directions=d, tf32=dt == "FP32"):
        if sid.endswith("BiasActiv"):
            p = P.make(d, layout=lay, dtype=dt, n=p.n, c=p.c, k=p.k, in_size=p.in_size, filter_size=p.filter_size,
                       pads=p.pads, strides=p.strides, bias=1, activation="relu")
        if not s.applicability(p):
            continue
        for c in [s.default_config(p)] + list(getattr(s, "alternatives", lambda q: [])(p))[:2]:
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
json.dump(res, open(f"/tmp/cubins/{os.environ['WHICH']}_{part}.json", "w"), indent=0)
print(len(seen), "distinct", len(res), "kernels")
