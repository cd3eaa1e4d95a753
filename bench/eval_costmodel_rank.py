"""Leave-one-preset-out check of a LambdaRank variant of the cost model (issue 20), same splits as
``eval_costmodel.py``. Not the shipped model: a ranking objective gives scores, not times, so only
top-1 and slowdown are compared (rel. error does not apply). Outside the kinds of problem the\nmodels were trained on, both answer with today's predictor, as in ``eval_costmodel.py``.

Fixed before evaluation: groups = problems (find records and PerfDB default-config samples of a
problem); relevance 3 for the problem's fastest sample, 2 within 1.1x of it, 1 within 1.5x, else 0;
``miofind.costmodel.PARAMS`` with ``objective=lambdarank`` and the same rounds, plus LightGBM's
defaults for the ranking parameters. Features are the regression model's (the log roofline time
stays a feature). Also reported: "both", the two models shipped together (the LambdaRank model
picks, the regression model states the times): top-1 and slowdown of the LambdaRank column with the
regression column's median relative error. ``python bench/eval_costmodel_rank.py [--out FOLDER]``
(``rank_eval.json`` in FOLDER).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_costmodel import default_config, evaluate_split, preset_keys  # noqa: E402
from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.models import MODELS  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def train_rank(samples, sm_count=132):
    lgb = cm._lightgbm()
    samples = sorted(samples, key=lambda s: s.problem_key)
    solver_ids = tuple(sorted({s.solver_id for s in samples}))
    meta = {"format": cm.FORMAT, "solvers": list(solver_ids), "version": "",
            "config_keys": list(cm.numeric_config_keys(s.config for s in samples)),
            "support": sorted({cm.support_class(cm.parse_problem_key(s.problem_key)) for s in samples})}
    shell = cm.CostModel(cm._Trees.empty(), meta)
    x, _, y = cm._matrix(shell, samples, sm_count, get_solver)
    keys = [s.problem_key for s in samples]
    bounds = [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]] + [len(keys)]
    label = np.concatenate([cm.relevance(10.0 ** y[a:b]) for a, b in zip(bounds, bounds[1:])])
    ds = lgb.Dataset(x, label=label, group=np.diff(bounds))
    booster = lgb.train(dict(cm.PARAMS, objective="lambdarank"), ds, num_boost_round=cm.NUM_ROUNDS)
    return cm.CostModel(cm._Trees.from_lightgbm(booster.dump_model()), meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="folder for rank_eval.json")
    args = ap.parse_args(argv)
    db = FindDB(str(ROOT / "finddb" / "sm_90-132.sqlite"), readonly=True, immutable=True)
    samples = cm.samples_from_db(db)
    finds = defaultdict(list)
    for r in db.iter_records(None):
        finds[r.problem_key].append(r)
    cols = ("regression", "rank", "today")
    pooled = {k: [] for k in cols}
    report = {}
    for held in MODELS:
        test = preset_keys(held) & set(finds)
        train = [s for s in samples if s.problem_key not in test]
        train_records = {k: v for k, v in finds.items() if k not in test}
        reg, rank = cm.train(train), train_rank(train)
        per = {k: [] for k in cols}
        # eval_costmodel's own split: the regression model where it answers, else today's predictor
        for key, rows in evaluate_split(test, train_records, finds, reg, 132):
            p = cm.parse_problem_key(key)
            solvers = [get_solver(r[0]) for r in rows]
            per["regression"].append([(r[1], r[2]) for r in rows])
            per["today"].append([(r[1], r[3]) for r in rows])
            if reg.supports(p, [s.id for s in solvers]):   # ranking scores: the lowest exp(-score) is the pick
                score = rank.trees.predict(rank.rows(p, [(s, default_config(s, p)) for s in solvers])[0])
                per["rank"].append([(r[1], float(np.exp(-v))) for r, v in zip(rows, score)])
            else:
                per["rank"].append([(r[1], r[3]) for r in rows])
        for k in per:
            pooled[k] += per[k]
        report[held] = _table(per)
        print(held, report[held], flush=True)
    report["pooled"] = _table(pooled)
    print("pooled", report["pooled"], flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "rank_eval.json").write_text(json.dumps(report, indent=1) + "\n")


def _table(per):
    """Each column's metrics, and "both": the LambdaRank pick with the regression model's times."""
    out = {k: _short(cm.ranking_metrics(v)) for k, v in per.items()}
    out["rank"]["median_rel_err_pct"] = None   # exp(-score) is no time
    out["both"] = dict(out["rank"], median_rel_err_pct=out["regression"]["median_rel_err_pct"])
    return out


def _short(m):
    return {"problems": m["problems"], "top1": round(100 * m["top1"], 1), "mean_slowdown_%": round(100 * m["mean_slowdown"], 2),
            "worst": round(m["worst_slowdown"], 2), "median_rel_err_pct": round(100 * m["median_rel_err"], 1)}


if __name__ == "__main__":
    main()
