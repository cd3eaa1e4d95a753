"""Leave one preset out with K cost models per split (seeds s..s+K-1): what averaging them, and picking by their
disagreement, does to the pick (issue 20).

Per held-out preset, K models are trained as ``eval_costmodel.py --default-configs`` trains one (the shipped recipe;
only LightGBM's seed differs), and every held-out problem's candidates are scored by each: the regression trees'
log10 times and the LambdaRank forest's scores. The rows go to ``--out``/scores.json.gz, and the pick rules of
``RULES`` are scored on them against the measured times (``costmodel.ranking_metrics``). ResNet-101's split holds out
ResNet-50's layers too and trains on the same problems; it is scored once and counted twice in the pooled figures, as
``eval_costmodel.py`` counts it.

``python bench/costmodel_ensemble.py --k 5 --seed 1 --out bench/results/<session>/ensemble/seed1``
``python bench/costmodel_ensemble.py --rescore <that folder>`` scores the stored rows again (no training).
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

from eval_costmodel import TARGETS, held_out_keys, preset_keys  # noqa: E402
from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.models import MODELS  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _z(v):
    s = v.std()
    return (v - v.mean()) / s if s > 0 else v * 0.0


def _rules():
    """name -> f(log10 times [K x n], rank scores [K x n]) -> key to sort ascending (the pick first)."""
    rules = {
        "single (model 1's ranker, as shipped)": lambda t, r: -r[0],
        "single (model 1's times)": lambda t, r: t[0],
        "mean of K rankers' scores": lambda t, r: -r.mean(0),
        "mean of K models' log times": lambda t, r: t.mean(0),
        "median of K models' log times": lambda t, r: np.median(t, 0),
        "votes: most models' ranker top": lambda t, r: -np.bincount(r.argmax(1), minlength=r.shape[1]) - 1e-6 * r.mean(0),
    }
    for lam in (0.5, 1.0, 2.0):
        rules[f"mean log time + {lam} sd"] = lambda t, r, lam=lam: t.mean(0) + lam * t.std(0)
    for w in (0.5, 1.0):
        # the rankers' mean score and the times, each standardised within the problem
        rules[f"z(rank) + {w} z(time)"] = lambda t, r, w=w: -_z(r.mean(0)) + w * _z(t.mean(0))
    return rules


def score(problems, rules):
    """problems: [(held, key, measured ms [n], log times [K x n], rank scores [K x n])] -> rule -> held -> metrics."""
    out = {}
    for name, rule in rules.items():
        per = defaultdict(list)
        for held, key, measured, t, r in problems:
            order = np.argsort(rule(t, r), kind="stable")
            place = np.empty(len(order), int)
            place[order] = np.arange(len(order))
            pred = 10.0 ** t.mean(0)
            rows = [(float(m), float(p), int(q)) for m, p, q in zip(measured, pred, place)]
            per[held].append(rows)
            if held == "resnet50":   # ResNet-101's split: the same problems, counted again as eval_costmodel does
                per["resnet101"].append(rows)
        out[name] = {h: cm.ranking_metrics(v) for h, v in per.items()}
        out[name]["pooled"] = cm.ranking_metrics([x for v in per.values() for x in v])
    return out


def render(scored, k, seed) -> str:
    lines = [f"# {k} cost models per split (LightGBM seeds {seed}-{seed + k - 1}), leave one preset out", "",
             "Pick rules over the same trained models. Rel. err. is always that of the mean of the K models' log "
             "times. Targets: top-1 >= 94%, mean slowdown <= 2.5%, worst <= 1.5x, median rel. err. <= 15%.", "",
             *table(scored)]
    return "\n".join(lines) + "\n"


def table(scored) -> list[str]:
    """The markdown table of rule -> held -> metrics (``score``): pooled figures and top-1 per preset."""
    lines = ["| rule | pooled top-1 | mean slowdown | worst | rel. err. | top-1 per preset (R50, VGG, MNv2, Inc3, "
             "UNet) |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for name, per in scored.items():
        p = per["pooled"]
        each = ", ".join(f"{100 * per[h]['top1']:.1f}" for h in ("resnet50", "vgg16", "mobilenet_v2", "inception_v3",
                                                                   "unet") if h in per)
        lines.append(f"| {name} | {100 * p['top1']:.1f}% | {100 * p['mean_slowdown']:.2f}% | "
                     f"{p['worst_slowdown']:.2f}x | {100 * p['median_rel_err']:.1f}% | {each} |")
    return lines


def load(folder):
    data = json.loads(gzip.decompress((Path(folder) / "scores.json.gz").read_bytes()))
    probs = [(d["held"], d["key"], np.array(d["measured"]), np.array(d["log_times"]), np.array(d["rank_scores"]))
             for d in data["problems"]]
    return data, probs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--k", type=int, default=5, help="models per split")
    ap.add_argument("--seed", type=int, default=1, help="first LightGBM seed")
    ap.add_argument("--out", help="folder for scores.json.gz, ensemble.md and ensemble.json")
    ap.add_argument("--rescore", help="a folder of this script's: score its rows again, train nothing")
    args = ap.parse_args(argv)

    if args.rescore:
        data, probs = load(args.rescore)
        out, k, seed = Path(args.rescore), data["k"], data["seed"]
    else:
        db = FindDB(args.db, readonly=True, immutable=True)
        samples = cm.samples_from_db(db)
        finds = defaultdict(list)
        for r in db.iter_records(None):
            finds[r.problem_key].append(r)
        probs, dump, k, seed = [], [], args.k, args.seed
        for held in MODELS:
            if held == "resnet101":
                continue
            test = sorted(preset_keys(held) & set(finds))
            excluded = held_out_keys(held)
            train = [s for s in samples if s.problem_key not in excluded]
            models = []
            for i in range(k):
                t0 = time.perf_counter()
                models.append(cm.train(train, params={"seed": seed + i}, source=f"all but {held}",
                                       default_configs=True, perceptron=False))
                print(f"{held}: model {i + 1}/{k} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            for key in test:
                recs = finds[key]
                p = cm.parse_problem_key(key)
                solvers = [get_solver(r.solver_id) for r in recs]
                if not models[0].supports(p, [s.id for s in solvers]):
                    continue   # immediate mode's fallback answers these: not a question for the ensemble
                pairs = [(s, cm.default_config(s, p)) for s in solvers]
                t, r = [], []
                for m in models:
                    times, neg = m._evaluate(p, pairs, 132)
                    t.append(np.log10(times))
                    r.append(-np.asarray(neg))
                measured = [x.time_ms for x in recs]
                probs.append((held, key, np.array(measured), np.array(t), np.array(r)))
                dump.append({"held": held, "key": key, "solvers": [x.solver_id for x in recs], "measured": measured,
                             "log_times": np.array(t).round(6).tolist(), "rank_scores": np.array(r).round(6).tolist()})
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "scores.json.gz").write_bytes(gzip.compress(json.dumps(
            {"db": args.db, "k": k, "seed": seed, "problems": dump}).encode()))
    scored = score(probs, _rules())
    md = render(scored, k, seed)
    print(md)
    (out / "ensemble.md").write_text(md)
    (out / "ensemble.json").write_text(json.dumps({"k": k, "seed": seed, "targets": TARGETS, "rules": scored},
                                                  indent=1) + "\n")


if __name__ == "__main__":
    main()
