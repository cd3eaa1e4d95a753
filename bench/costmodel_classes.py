"""Leave one preset out with two model classes the project had not tried (issue 20): a classifier of the fastest
solver from the problem's features alone (MIOpen's TunaNet's form: one label per problem, the pick the most probable
of the problem's candidates), and a multilayer perceptron regressing log time on the shipped recipe's rows.

Per held-out preset, as ``costmodel_pairwise.py`` (ResNet-101 scored once and counted twice), with the shipped
recipe's pointwise model trained on the same split beside them. The classifier is LightGBM's multiclass objective;
the perceptron is scikit-learn's ``MLPRegressor`` (standardised inputs, early stopping). Rows go to
``--out``/scores.json.gz.

``python bench/costmodel_classes.py --seed 1 --out bench/results/<session>/classes/seed1``
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from costmodel_ensemble import _z, table  # noqa: E402
from costmodel_pairwise import SPLITS, _known, db_data, problem_rows  # noqa: E402
from eval_costmodel import TARGETS, held_out_keys, preset_keys  # noqa: E402
from miofind import costmodel as cm  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# t = [pointwise log times, MLP log times, -log class probability], r = [pointwise ranker scores]
RULES = {
    "pointwise ranker (as shipped)": lambda t, r: -r[0],
    "pointwise times": lambda t, r: t[0],
    "MLP times": lambda t, r: t[1],
    "classifier": lambda t, r: t[2],
    "z(ranker) + z(MLP)": lambda t, r: -_z(r[0]) + _z(t[1]),
    "z(ranker) + z(classifier)": lambda t, r: -_z(r[0]) + _z(t[2]),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", default="256,128", help="the perceptron's hidden layer widths")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    lgb = cm._lightgbm()
    from sklearn.neural_network import MLPRegressor
    from sklearn.preprocessing import StandardScaler

    samples, finds = db_data(args.db)
    params = {**cm.PARAMS, **cm.IMMEDIATE_PARAMS, "seed": args.seed}
    hidden = tuple(int(h) for h in args.hidden.split(","))
    probs, dump = [], []
    for held in SPLITS:
        excluded = held_out_keys(held)
        train = [s for s in samples if s.problem_key not in excluded]
        t0 = time.perf_counter()
        point = cm.train(train, params={"seed": args.seed}, source=f"all but {held}", default_configs=True,
                         perceptron=False)
        own = point.meta["feature_names"].index("log_roofline_ms")   # problem features before it
        solvers = point.meta["solvers"]
        col = {s: i for i, s in enumerate(solvers)}
        xs, ys, xc, yc = [], [], [], []
        for key in sorted({s.problem_key for s in train}):
            recs = [r for r in finds.get(key, []) if _known(r.solver_id) and r.solver_id in col]
            if len(recs) < 2:
                continue
            x, base = problem_rows(point, key, recs)
            xs.append(x)
            ys.append(np.log10([r.time_ms for r in recs]) - base)
            xc.append(x[0, :own])
            yc.append(col[min(recs, key=lambda r: r.time_ms).solver_id])
        x, y = np.vstack(xs), np.concatenate(ys)
        scaler = StandardScaler().fit(x)
        mlp = MLPRegressor(hidden_layer_sizes=hidden, early_stopping=True, random_state=args.seed, max_iter=300,
                           batch_size=256, learning_rate_init=1e-3, alpha=1e-4).fit(scaler.transform(x), y)
        cparams = {**params, "objective": "multiclass", "num_class": len(solvers), "metric": "multi_logloss"}
        cparams.pop("alpha", None)
        clf = lgb.train(cparams, lgb.Dataset(np.array(xc), label=np.array(yc)), num_boost_round=200)
        print(f"{held}: {len(y)} rows, {len(yc)} problems; three models in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
        for key in sorted(preset_keys(held) & set(finds)):
            recs = [r for r in finds[key] if _known(r.solver_id)]
            p = cm.parse_problem_key(key)
            if len(recs) < 2 or not point.supports(p, [r.solver_id for r in recs]):
                continue
            x, base = problem_rows(point, key, recs)
            pairs = [(get_solver(r.solver_id), cm.default_config(get_solver(r.solver_id), p)) for r in recs]
            times, neg = point._evaluate(p, pairs, 132)
            mlp_t = mlp.predict(scaler.transform(x)) + base
            prob = clf.predict(x[:1, :own])[0]
            cls = -np.log10(np.maximum([prob[col[r.solver_id]] if r.solver_id in col else 0.0 for r in recs], 1e-12))
            t = np.array([np.log10(times), mlp_t, cls])
            r = np.array([-np.asarray(neg)])
            measured = np.array([rr.time_ms for rr in recs])
            probs.append((held, key, measured, t, r))
            dump.append({"held": held, "key": key, "solvers": [rr.solver_id for rr in recs],
                         "measured": measured.tolist(), "log_times": t.round(6).tolist(),
                         "rank_scores": r.round(6).tolist()})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json.gz").write_bytes(gzip.compress(json.dumps({"db": args.db, "seed": args.seed,
                                                                     "hidden": hidden, "problems": dump}).encode()))
    scored = {name: score_rows(probs, rule, 1 if "MLP" in name else 0) for name, rule in RULES.items()}
    lines = [f"# A fastest-solver classifier and a perceptron (seed {args.seed}), leave one preset out", "",
             "Targets: top-1 >= 94%, mean slowdown <= 2.5%, worst <= 1.5x, median rel. err. <= 15%. Rel. err. is of "
             "the pointwise times, except in the MLP rows (the MLP's times).", "", *table(scored)]
    md = "\n".join(lines) + "\n"
    print(md)
    (out / "classes.md").write_text(md)
    (out / "classes.json").write_text(json.dumps({"seed": args.seed, "hidden": hidden, "targets": TARGETS,
                                                  "rules": scored}, indent=1) + "\n")


def score_rows(probs, rule, row):
    """held -> metrics (``cm.ranking_metrics``) of ``rule``'s picks, with the times of ``t[row]`` (for rel. err.)."""
    per = defaultdict(list)
    for held, key, measured, t, r in probs:
        order = np.argsort(rule(t, r), kind="stable")
        place = np.empty(len(order), int)
        place[order] = np.arange(len(order))
        rows = [(float(m), float(10.0 ** p), int(q)) for m, p, q in zip(measured, t[row], place)]
        per[held].append(rows)
        if held == "resnet50":   # ResNet-101's split: the same problems, counted again as eval_costmodel does
            per["resnet101"].append(rows)
    out = {h: cm.ranking_metrics(v) for h, v in per.items()}
    out["pooled"] = cm.ranking_metrics([x for v in per.values() for x in v])
    return out


if __name__ == "__main__":
    main()
