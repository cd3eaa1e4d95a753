"""Decision rules over the cost model's outputs, fitted on out-of-fold rows, scored on held-out presets.

Reads ``costmodel_nested.py``'s pickle. Every rule's parameters are fitted on the outer split's
oof rows (its training presets, each predicted by a model that did not see it) and only then applied
to the outer test rows; the figures are pooled as ``eval_costmodel.py`` pools them (ResNet-101's
split counted again as ResNet-50's). Problems today's predictor answers (``fallback``) keep its pick.

``python bench/costmodel_stack.py /tmp/nested.pkl [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miofind.predict import parse_problem_key  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

WEIGHT = {"resnet50": 2}   # ResNet-101's split is ResNet-50's


def metrics(problems, pick, times=None):
    """top-1, mean/worst slowdown of ``pick(problem) -> row index``; median rel. err. of ``times``."""
    slow, w, rel = [], [], []
    for q in problems:
        rows = q["rows"]
        best = min(r[1] for r in rows)
        slow.append(rows[pick(q)][1] / best)
        w.append(WEIGHT.get(q["held"], 1) if q.get("_test") else 1)
        if times is not None:
            rel += [abs(t / r[1] - 1) for t, r in zip(times(q), rows)] * w[-1]
    slow, w = np.array(slow), np.array(w)
    out = {"problems": int(w.sum()), "top1": float((w * (slow <= 1 + 1e-12)).sum() / w.sum()),
           "mean_slowdown": float((w * slow).sum() / w.sum() - 1), "worst_slowdown": float(slow.max())}
    if rel:
        out["median_rel_err"] = float(np.median(rel))
    return out


def by_rank(q):
    return max(range(len(q["rows"])), key=lambda i: q["rows"][i][3])


def by_regression(q, adj=None):
    return min(range(len(q["rows"])), key=lambda i: q["rows"][i][2] + (adj(q, i) if adj else 0.0))


def group_of(q, sid):
    p = parse_problem_key(q["key"])
    return (sid, p.dtype, p.direction)


def calibration(oof, level):
    """Median log10(measured / predicted) per solver (level 1) or per (solver, dtype, direction) (2)."""
    res = defaultdict(list)
    for q in oof:
        if q["fallback"]:
            continue
        for r in q["rows"]:
            g = group_of(q, r[0])[:level]
            res[g].append(math.log10(r[1]) - r[2])
    return {g: float(np.median(v)) for g, v in res.items() if len(v) >= 20}


def blend_pick(lam):
    """argmax of ranking score - lam * log10 regression time."""
    return lambda q: max(range(len(q["rows"])), key=lambda i: q["rows"][i][3] - lam * q["rows"][i][2])


def fit_blend(oof):
    grid = [0.0, 0.25, 0.5, 1, 2, 4, 8, 16]
    scores = {lam: metrics([q for q in oof if not q["fallback"]], blend_pick(lam))["mean_slowdown"] for lam in grid}
    return min(grid, key=lambda lam: (scores[lam], lam)), scores


def pair_features(q, a, b):
    """Features of the ranker's first two rows a, b (a ranked first)."""
    ra, rb = q["rows"][a], q["rows"][b]
    p = parse_problem_key(q["key"])
    fa, fb = get_solver(ra[0]).family, get_solver(rb[0]).family
    return [ra[3] - rb[3], rb[2] - ra[2], float(fa == "cudnn"), float(fb == "cudnn"),
            float(p.dtype in ("FP16", "BF16")), float(p.n > 1), 1.0]


def top2(q):
    order = sorted(range(len(q["rows"])), key=lambda i: -q["rows"][i][3])
    return order[0], order[1]


def fit_arbiter(oof, l2=1.0, iters=300):
    """Weighted logistic regression: P(the second is faster) from ``pair_features``, each pair weighted
    by |log2(ta/tb)| (a costly swap weighs more); Newton steps."""
    x, y, w = [], [], []
    for q in oof:
        if q["fallback"] or len(q["rows"]) < 2:
            continue
        a, b = top2(q)
        ta, tb = q["rows"][a][1], q["rows"][b][1]
        x.append(pair_features(q, a, b))
        y.append(float(tb < ta))
        w.append(abs(math.log2(ta / tb)))
    x, y, w = np.array(x), np.array(y), np.array(w)
    beta = np.zeros(x.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-x @ beta))
        g = x.T @ (w * (p - y)) + l2 * beta
        h = (x * (w * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(beta))
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta


def arbiter_pick(beta):
    def pick(q):
        if len(q["rows"]) < 2:
            return 0
        a, b = top2(q)
        return b if np.dot(pair_features(q, a, b), beta) > 0 else a
    return pick


def unseen_filter_rule(oof, train_filters_of):
    """For problems whose filter shape no training problem has: which pick (the ranking's, the
    regression's, cuDNN's, today's predictor's) has the lowest mean slowdown on such oof problems
    (None where the oof rows have fewer than 50 of them: the model's pick stays)."""
    qs = [q for q in oof if not q["fallback"] and parse_problem_key(q["key"]).filter_size
          not in train_filters_of(q)]
    if len(qs) < 50:
        return None, len(qs), {}
    scores = {name: metrics(qs, f)["mean_slowdown"] for name, f in FALLBACK_PICKS.items()}
    return min(scores, key=scores.get), len(qs), scores


def cudnn_pick(q):
    c = [i for i, r in enumerate(q["rows"]) if get_solver(r[0]).family == "cudnn"]
    return c[0] if c else by_rank(q)


def today_pick(q):
    return min(range(len(q["rows"])), key=lambda i: q["rows"][i][4])


FALLBACK_PICKS = {"rank": by_rank, "regression": by_regression, "cudnn": cudnn_pick, "today": today_pick}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nested")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    data = pickle.loads(Path(args.nested).read_bytes())
    from miofind.db import FindDB
    db_keys = {r.problem_key for r in FindDB(str(Path(__file__).resolve().parents[1] / "finddb" / "sm_90-132.sqlite"),
                                             readonly=True, immutable=True).iter_records(None)}
    from costmodel_nested import SPLITS
    from eval_costmodel import held_out_keys
    held_keys = {s: set().union(*(held_out_keys(m) for m in ms)) for s, ms in SPLITS.items()}
    filters = {k: parse_problem_key(k).filter_size for k in db_keys}

    def filters_without(*held):
        ex = set().union(*(held_keys[h] for h in held))
        return {f for k, f in filters.items() if k not in ex}
    tests, report = [], {"rules": {}, "fitted": {}, "args": data.pop("_args", None)}
    picks = defaultdict(list)   # rule -> [(problem, pick index)]
    cal_times = {1: [], 2: []}
    for outer, d in data.items():
        test = [dict(q, _test=True) for q in d["test"]]
        oof = d["oof"]
        tests += test
        lam, lam_scores = fit_blend(oof)
        beta = fit_arbiter(oof)
        cals = {lv: calibration(oof, lv) for lv in (1, 2)}
        report.setdefault("oof_rank", {})[outer] = metrics([q for q in oof if not q["fallback"]], by_rank)
        report["fitted"][outer] = {"blend_lambda": lam, "blend_oof_mean_slowdown": lam_scores,
                                   "arbiter_beta": beta.tolist(), "oof_problems": len(oof)}
        inner_filters = {h: filters_without(outer, h) for h in held_keys if h != outer}
        choice, n_unseen, uscores = unseen_filter_rule(oof, lambda q: inner_filters[q["held"]])
        outer_filters = filters_without(outer)
        report["fitted"][outer]["unseen_filter"] = {"choice": choice, "oof_problems": n_unseen, "oof_mean_slowdown": uscores,
                                                    "test_problems": sum(parse_problem_key(q["key"]).filter_size not in outer_filters for q in test)}

        def unseen_rule(q, choice=choice, outer_filters=outer_filters):
            if choice and parse_problem_key(q["key"]).filter_size not in outer_filters:
                return FALLBACK_PICKS[choice](q)
            return by_rank(q)
        rules = {
            "rank (shipped)": by_rank,
            "rank; unseen filter shape: the pick chosen on oof": unseen_rule,
            "regression": by_regression,
            "blend rank - lambda*log10 t (lambda by oof)": blend_pick(lam),
            "arbiter on rank's top two (logistic, oof)": arbiter_pick(beta),
        }
        for lv, cal in cals.items():
            rules[f"regression, calibrated per {'solver' if lv == 1 else 'solver x dtype x dir'}"] = (
                lambda cal, lv: lambda q: by_regression(q, lambda q, i: cal.get(group_of(q, q["rows"][i][0])[:lv], 0.0))
            )(cal, lv)
        for name, rule in rules.items():
            for q in test:
                picks[name].append((q, by_rank(q) if q["fallback"] else rule(q)))
        for lv, cal in cals.items():
            for q in test:
                if q["fallback"]:
                    cal_times[lv].append((q, [r[4] for r in q["rows"]]))
                else:
                    cal_times[lv].append((q, [10 ** (r[2] + cal.get(group_of(q, r[0])[:lv], 0.0)) for r in q["rows"]]))
    uncal = {id(q): [r[4] if q["fallback"] else 10 ** r[2] for r in q["rows"]] for q in tests}
    lines = ["| rule | top-1 | mean slowdown | worst | median rel. err. of the times |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, pq in picks.items():
        idx = {id(q): i for q, i in pq}
        m = metrics([q for q, _ in pq], lambda q: idx[id(q)], lambda q: uncal[id(q)])
        report["rules"][name] = m
        lines.append(f"| {name} | {100 * m['top1']:.1f}% | {100 * m['mean_slowdown']:.2f}% | {m['worst_slowdown']:.2f}x "
                     f"| {100 * m['median_rel_err']:.1f}% |")
    for lv, ct in cal_times.items():
        tt = {id(q): t for q, t in ct}
        m = metrics([q for q, _ in ct], by_rank, lambda q: tt[id(q)])
        report["rules"][f"rank, times calibrated level {lv}"] = m
        lines.append(f"| rank, times calibrated per {'solver' if lv == 1 else 'solver x dtype x dir'} (oof medians) "
                     f"| {100 * m['top1']:.1f}% | {100 * m['mean_slowdown']:.2f}% | {m['worst_slowdown']:.2f}x "
                     f"| {100 * m['median_rel_err']:.1f}% |")
    # per held-out preset, each rule
    per = ["", "| rule | held out | top-1 | mean slowdown | worst |", "| --- | --- | ---: | ---: | ---: |"]
    for name, pq in picks.items():
        idx = {id(q): i for q, i in pq}
        for outer in data:
            qs = [q for q, _ in pq if q["held"] == outer]
            m = metrics(qs, lambda q: idx[id(q)])
            report["rules"].setdefault(name + " per preset", {})[outer] = m
            per.append(f"| {name} | {outer} | {100 * m['top1']:.1f}% | {100 * m['mean_slowdown']:.2f}% | "
                       f"{m['worst_slowdown']:.2f}x |")
    oofm = report["oof_rank"]
    per += ["", "The ranking forest's pick on the oof rows (the model's own problems, each outer split's inner "
            "leave-one-preset-out; the selection criterion for variants), mean over the outer splits: top-1 "
            f"{100 * np.mean([m['top1'] for m in oofm.values()]):.1f}%, mean slowdown "
            f"{100 * np.mean([m['mean_slowdown'] for m in oofm.values()]):.2f}%, worst (max) "
            f"{max(m['worst_slowdown'] for m in oofm.values()):.2f}x"]
    md = "\n".join(lines + per) + "\n"
    print(md)
    print(json.dumps(report["fitted"], indent=1))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "stack.md").write_text(md)
        (out / "stack.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
