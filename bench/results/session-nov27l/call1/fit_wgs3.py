"""Fits ESTIMATE's per-shape terms (microseconds per wave per j tile, per wave) of the Hopper W solver's three-warpgroup
tiles to call 1's sweep (r/sweep_W.json: every WGS = 3, 4-stage config in clusters of 1-4 on ResNet-50's N=32 FP16 W
layers, isolated kernel time), holding the launch, partial-plane, reduce and cluster terms at ESTIMATE's values.
python3 fit_wgs3.py"""
import json, os, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", ".."))
from miofind.predict import parse_problem_key  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_wrw as hw  # noqa: E402

E = hw.ESTIMATE
data = {}
for row in json.load(open(os.path.join(HERE, "r", "sweep_W.json")))["rows"]:
    p = parse_problem_key(row["key"])
    for r in row["ours"]:
        c = r["cfg"]
        if c.get("WGS") != 3:
            continue
        shape, jw, waves, part_mb, red, cl_mb = hw.estimate_terms(p, c)
        us = r["isolated_ms"] * 1e3
        rest = us - (E["launch_us"] + part_mb * E["partial_us_per_mb"] + red * E["reduce_us"] + cl_mb * E["cluster_us_per_mb"])
        data.setdefault(shape, []).append((jw, waves, rest, us))
for shape, d in sorted(data.items()):
    a = np.array([[x[0], x[1]] for x in d])
    y = np.array([x[2] for x in d])
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    err = np.abs(a @ coef - y) / np.array([x[3] for x in d])
    print(f"{shape}: {len(d)} configs, per wave per j tile {coef[0]:.3f} us, per wave {coef[1]:.2f} us, "
          f"median |error| {np.median(err):.3f} of the time")
