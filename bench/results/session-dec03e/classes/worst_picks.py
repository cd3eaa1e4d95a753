"""Session dec03e: the three worst picks of z(ranking) + z(perceptron) per seed, from costmodel_classes.py's rows.
Usage: python worst_picks.py [RUN ...] (default: seed1-h64x32 seed2-h64x32 seed3-h64x32, beside this file)."""

import gzip
import json
import sys
from pathlib import Path

import numpy as np


def z(v):
    return (v - v.mean()) / v.std() if v.std() > 0 else v * 0


for run in sys.argv[1:] or ["seed1-h64x32", "seed2-h64x32", "seed3-h64x32"]:
    d = json.loads(gzip.decompress((Path(__file__).parent / run / "scores.json.gz").read_bytes()))
    worst = []
    for p in d["problems"]:
        t, r, m = np.array(p["log_times"]), np.array(p["rank_scores"]), np.array(p["measured"])
        pick = int(np.argsort(-z(r[0]) + z(t[1]), kind="stable")[0])
        worst.append((m[pick] / m.min(), p["held"], p["key"], p["solvers"][pick], p["solvers"][int(m.argmin())]))
    for w in sorted(worst, reverse=True)[:3]:
        print(f"{run}: {w[0]:.2f}x {w[1]} {w[2]}: picked {w[3]}, fastest {w[4]}")
