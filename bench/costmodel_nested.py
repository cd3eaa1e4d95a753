"""Nested leave-one-preset-out for the learned cost model: out-of-fold rows for choosing decision rules honestly.

For each distinct outer split of ``eval_costmodel.py`` (ResNet-101's is ResNet-50's), the model of
the outer training set is asked about the held-out preset's problems (the "test" rows, as
``eval_costmodel.py`` evaluates them: same training, same seed, same fallback), and, inside the
outer training set, each remaining preset is held out in turn (an inner leave-one-preset-out) to
give out-of-fold ("oof") rows of the training presets. A decision rule (calibration of the times, a
pick among the candidates) can then be fitted on the oof rows alone and scored on the test rows:
the held-out preset's records never enter the choice.

Each row: (solver id, measured ms, log10 regression ms, ranking score, today's ms). Written as a
pickle: ``{outer: {"test": [...], "oof": [...]}}``, each problem {"key", "held", "fallback", "rows"}.

``python bench/costmodel_nested.py --out /tmp/nested.pkl [--seed N] [--rank-labels ...]``
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.models import MODELS  # noqa: E402
from miofind.predict import model_time_ms, nearest_problem, predict  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

from eval_costmodel import ROOT, default_config, held_out_keys, preset_keys  # noqa: E402

SPLITS = {"resnet50": ("resnet50", "resnet101"), "vgg16": ("vgg16",), "mobilenet_v2": ("mobilenet_v2",),
          "inception_v3": ("inception_v3",), "unet": ("unet",)}


def answer(test_keys, train_records, finds, model, sm_count, held, rel=None):
    """The rows of ``test_keys`` as ``eval_costmodel.evaluate_split`` makes them, with the model's
    log10 regression times and ranking scores (None where today's predictor answers for it)."""
    train_keys = sorted(train_records)
    out = []
    for key in sorted(test_keys):
        recs = finds.get(key)
        if not recs:
            continue
        p = cm.parse_problem_key(key)
        solvers = [get_solver(r.solver_id) for r in recs]
        suffix = key[key.rfind("-"):]
        near = nearest_problem(p, [k for k in train_keys if k.endswith(suffix)])
        today = predict(p, solvers, near, train_records.get(near[0], []) if near else [], sm_count)
        fallback = not model.supports(p, [s.id for s in solvers])
        extra = None
        if fallback:
            mu = [math.log10(today[s.id].time_ms) for s in solvers]
            score = [-m for m in mu]
            # the model's times of the solvers it knows, outside its training kinds (for the record)
            known = [s for s in solvers if model.knows(s.id)]
            if known:
                t = dict(zip((s.id for s in known), model._evaluate(
                    p, [(s, default_config(s, p)) for s in known], sm_count)[0]))
                extra = [t.get(s.id) for s in solvers]
        else:
            pairs = [(s, default_config(s, p)) for s in solvers]
            times, neg = model._evaluate(p, pairs, sm_count)
            mu = [math.log10(t) for t in times]
            ref = [i for i, s in enumerate(solvers) if s.family == "cudnn"]
            if rel is not None and ref:   # the other solvers' times: cuDNN's times their predicted ratio
                c = mu[ref[0]]
                rt = rel._evaluate(p, pairs, sm_count)[0]
                mu = [m if s.family == "cudnn" or not rel.knows(s.id) else
                      c + math.log10(t) - math.log10(model_time_ms(p, s, sm_count))
                      for m, s, t in zip(mu, solvers, rt)]
            score = [-v for v in neg] if neg is not None else [-m for m in mu]
        out.append({"key": key, "held": held, "fallback": fallback, "model_ms_outside": extra,
                    "rows": [(r.solver_id, r.time_ms, m, s, today[r.solver_id].time_ms)
                             for r, m, s in zip(recs, mu, score)]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=cm.PARAMS["seed"])
    ap.add_argument("--rank-labels", default="bands", choices=sorted(cm.RANK_LABELS))
    ap.add_argument("--rank-param", action="append", default=[], metavar="KEY=VALUE",
                    help="a LightGBM parameter of the ranking forest over costmodel.RANK_PARAMS (repeatable)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a LightGBM parameter of the regression forest over costmodel.PARAMS (repeatable)")
    ap.add_argument("--rounds", type=int, default=cm.NUM_ROUNDS)
    ap.add_argument("--rank-rounds", type=int, default=cm.RANK_ROUNDS)
    ap.add_argument("--default-configs", action="store_true",
                    help="config features, each find record given its solver's default config on its problem "
                         "(what a held-out problem is asked with), not its tuned one; no PerfDB samples")
    ap.add_argument("--relative", action="store_true",
                    help="also a regression forest of log10(time / cuDNN's time) of each non-cuDNN record; the "
                         "rows' regression times are then cuDNN's predicted time times the predicted ratio")
    ap.add_argument("--align-features", action="store_true",
                    help="the GEMM leading dimensions' byte alignment as problem features (costmodel.train(align_features=True); "
                         "off without it: this script trains its default-config models as basis 'tuned', as it passes "
                         "--param extra_trees=true explicitly)")
    ap.add_argument("--neighbour-features", action="store_true",
                    help="what the nearest known problems' records say of each solver as features "
                         "(costmodel.train(neighbour_features=True), miofind.neighbours)")
    ap.add_argument("--neighbour-k", type=int, default=None,
                    help="with --neighbour-features: neighbours averaged in nbk_* (miofind.neighbours.K)")
    ap.add_argument("--only", default=None, help="comma-separated outer splits (default: all five)")
    ap.add_argument("--perceptron", action=argparse.BooleanOptionalAction, default=None,
                    help="a perceptron states the times and joins the ranking's order (costmodel.train's perceptron; "
                         "default: as shipped, costmodel.IMMEDIATE_PERCEPTRON where scikit-learn is installed)")
    args = ap.parse_args(argv)

    if args.neighbour_k is not None:
        import miofind.neighbours

        miofind.neighbours.K = args.neighbour_k
    db = FindDB(args.db, readonly=True, immutable=True)
    sm_count = 132
    samples = cm.samples_from_db(db, with_defaults=not args.default_configs)
    if args.default_configs:   # as costmodel.train(default_configs=True) learns them
        samples = cm.default_config_samples(samples)
    finds = defaultdict(list)
    for r in db.iter_records(None):
        finds[r.problem_key].append(r)
    presets = {m: preset_keys(m) & set(finds) for m in MODELS}
    split_keys = {s: set().union(*(presets[m] for m in ms)) for s, ms in SPLITS.items()}
    # never trained on: the split's problems and their BF16 twins (as eval_costmodel.py)
    excluded = {s: set().union(*(held_out_keys(m) for m in ms)) for s, ms in SPLITS.items()}

    def value(v):
        for conv in (int, float):
            try:
                return conv(v)
            except ValueError:
                pass
        return v

    params = dict({"seed": args.seed}, **{k: value(v) for k, v in (a.split("=", 1) for a in args.param)})
    rank_params = {k: value(v) for k, v in (a.split("=", 1) for a in args.rank_param)}

    cudnn_ms = {}
    for s in samples:
        if get_solver(s.solver_id).family == "cudnn":
            cudnn_ms[s.problem_key] = s.time_ms
    rel_samples = []
    if args.relative:
        for s in samples:
            sv = get_solver(s.solver_id)
            if sv.family != "cudnn" and s.problem_key in cudnn_ms:
                p = cm.parse_problem_key(s.problem_key)
                rel_samples.append(cm.Sample(s.problem_key, s.solver_id, s.config,
                                             s.time_ms / cudnn_ms[s.problem_key] * model_time_ms(p, sv, sm_count)))

    def fit_rel(exclude, source):
        if not args.relative:
            return None
        return cm.train([s for s in rel_samples if s.problem_key not in exclude], sm_count=sm_count,
                        rounds=args.rounds, rank_rounds=0, params=params, source=source)

    def fit(exclude, source):
        return cm.train([s for s in samples if s.problem_key not in exclude], sm_count=sm_count,
                        rounds=args.rounds, rank_rounds=args.rank_rounds, params=params,
                        rank_params=rank_params, source=source, rank_labels=args.rank_labels,
                        configs=args.default_configs, align_features=args.align_features,
                        neighbour_features=args.neighbour_features, perceptron=args.perceptron)

    result = {}
    for outer in (args.only.split(",") if args.only else SPLITS):
        t0 = time.perf_counter()
        test = split_keys[outer]
        train_records = {k: v for k, v in finds.items() if k not in excluded[outer]}
        model = fit(excluded[outer], f"all but {outer}")
        res = {"test": answer(test, train_records, finds, model, sm_count, outer, fit_rel(excluded[outer], outer)),
               "oof": []}
        for inner in SPLITS:
            if inner == outer:
                continue
            ex = excluded[outer] | excluded[inner]
            inner_records = {k: v for k, v in finds.items() if k not in ex}
            m = fit(ex, f"all but {outer}, {inner}")
            res["oof"] += answer(split_keys[inner], inner_records, finds, m, sm_count, inner, fit_rel(ex, inner))
        result[outer] = res
        print(f"{outer}: {len(res['test'])} test, {len(res['oof'])} oof problems, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
    result["_args"] = vars(args)
    Path(args.out).write_bytes(pickle.dumps(result))


if __name__ == "__main__":
    main()
