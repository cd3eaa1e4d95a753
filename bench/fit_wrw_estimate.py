"""Fit the Hopper W time model (solvers/implicit_gemm_hopper_wrw.ESTIMATE) to config sweeps (bench/sweep_configs.py
--dir W JSON files), and check the find's alternatives it picks, each layer held out of the fit in turn.

The model (estimate_terms): per tile shape (BM, BN, WGS, TMA) microseconds per wave per j tile and per wave, one
launch, the split's partial planes per MB and its reduce launch, the cluster split's exchange per MB; fitted by
non-negative least squares on relative error over every config of every layer. The check: for each held-out layer,
the fastest measured of the default config and the ALTERNATES configs that ``alternates`` (4 stages, the default's
loads) ranks first by the model fitted without that layer, among the configs the sweep measured, against cuDNN's best plan; beside it the default alone and the best of
the sweep.

    python bench/fit_wrw_estimate.py SWEEP.json [...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from miofind.problem import ProblemDescription  # noqa: E402
from shapes import NON_RESNET, _resnet50  # noqa: E402
from solvers.implicit_gemm_hopper_wrw import ALTERNATES, alternates, default_tile, estimate_terms  # noqa: E402

TERMS = ("launch_us", "partial_us_per_mb", "reduce_us", "cluster_us_per_mb")


def load(paths):
    layers = {**_resnet50(32), **{k: dict(v, n=32) for k, v in NON_RESNET.items()}}
    out = []
    for path in paths:
        for r in json.loads(Path(path).read_text())["rows"]:
            if not r["ours"] or not r["cudnn"]:
                continue
            p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **layers[r["layer"]])
            cud = min(x["isolated_ms"] for x in r["cudnn"]) * 1e3
            out.append((r["layer"], p, [(x["cfg"], x["isolated_ms"] * 1e3) for x in r["ours"]], cud))
    return out


def fit(rows, shapes) -> dict:
    X, y = [], []
    for _, p, cfgs, _ in rows:
        for c, us in cfgs:
            shape, jw, waves, part_mb, reduces, cl_mb = estimate_terms(p, c)
            x = np.zeros(2 * len(shapes) + len(TERMS))
            i = shapes.index(shape)
            x[2 * i], x[2 * i + 1] = jw, waves
            x[2 * len(shapes):] = (1.0, part_mb, reduces, cl_mb)
            X.append(x / us)
            y.append(1.0)
    coef, _ = nnls(np.array(X), np.array(y))
    out = {"tiles": {s: (round(float(coef[2 * i]), 3), round(float(coef[2 * i + 1]), 2)) for i, s in enumerate(shapes)}}
    out.update({t: round(float(v), 3) for t, v in zip(TERMS, coef[2 * len(shapes):])})
    return out


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    rows = load(a.sweeps)
    shapes = sorted({estimate_terms(p, c)[0] for _, p, cfgs, _ in rows for c, _ in cfgs})
    coef = fit(rows, shapes)
    lines = [f"# {sum(len(r[2]) for r in rows)} timed configs on {len(rows)} layers; {len(shapes)} tile shapes",
             "ESTIMATE = " + json.dumps({**coef, "tiles": {str(k): v for k, v in coef["tiles"].items()}}), "",
             "| layer | cuDNN us | default | default + alternates | best of sweep | alternates picked |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    res = []
    for held in rows:
        name, p, cfgs, cud = held
        c_loo = fit([r for r in rows if r[0] != name], shapes)
        dflt = default_tile(p)
        t_default = next((us for c, us in cfgs if c == dflt), None)
        # the find's alternatives (the solver's own ranking, by the model fitted without this layer) among the
        # configs the sweep measured
        times = {json.dumps(c, sort_keys=True): us for c, us in cfgs}
        ranked = alternates(p, count=None, coef=c_loo)
        picks = [(c, times[k]) for c in ranked if (k := json.dumps(c, sort_keys=True)) in times][:ALTERNATES]
        t_find = min([us for _, us in picks] + ([t_default] if t_default else []))
        t_best = min(us for _, us in cfgs)
        res.append((name, t_default / cud if t_default else None, t_find / cud, t_best / cud))
        short = ", ".join(f"{c['BM']}x{c['BN']}/{c['WGS']} sk{c['SPLITK']} cl{c['CLUSTER']}" for c, _ in picks)
        lines.append(f"| {name} | {cud:.1f} | {res[-1][1] or float('nan'):.3f} | {res[-1][2]:.3f} | {res[-1][3]:.3f} | {short} |")
    for title, sel in (("all", lambda n: True), ("non-ResNet", lambda n: not n.startswith("r50")),
                       ("ResNet-50", lambda n: n.startswith("r50"))):
        rr = [r for r in res if sel(r[0])]
        lines.append(f"| **geomean {title}** ({len(rr)}) | | {gm([r[1] for r in rr if r[1]]):.3f} | {gm([r[2] for r in rr]):.3f} "
                     f"| {gm([r[3] for r in rr]):.3f} | |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "fit_wrw_estimate.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
