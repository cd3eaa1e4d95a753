"""Leave-one-preset-out evaluation of the tuner's "model" strategy against "guided" on the shipped DB.

For each of the six model presets (``miofind.models.MODELS``; as ``bench/eval_costmodel.py``), a
config-aware model (``costmodel.train(configs=True, rank_rounds=0)``, as ``miofind db train-model
--configs``) is trained on every record of the problems NOT in the held-out preset. For each PerfDB
entry of a held-out problem (one tuned config per (problem, solver)), over the solver's valid space
(``tuning.tuner.config_space``):

- ``model``: the 1-based place of the recorded tuned config in the model strategy's order (the
  default first, then the predicted fastest: ``model_order.order``);
- ``guided``: its place in guided's order where that is fixed without the unknown times: guided
  measures the default, then the default's neighbours nearest first (one batch); a tuned config
  among them has a known place, one found later (after a restart or a second step) has not;
- ``random``: (space size + 1) / 2, the expected place in a random order;
- ``pair``: whether the model predicts the tuned config faster than the default (where the PerfDB
  measured it faster).

The limit: the PerfDB keeps only the best of the configs guided tried (8 per entry in the shipped
DB), not their times. The recorded config is guided's pick by construction, so it is always within
guided's first 8 and the comparison favours guided; a config faster than it that the model ranks
early is invisible here. Configs-to-best against the true best needs every config's time:
``bench/tune_order_gpu.py`` (GPU). No GPU here. ``python bench/eval_tune_order.py --out bench/results/tune-order``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_costmodel import preset_keys  # noqa: E402
from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.db.findb import config_key  # noqa: E402
from miofind.models import MODELS  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.tuning.strategies import guided, model_order  # noqa: E402
from miofind.tuning.tuner import config_space  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def guided_place(space: list[dict], tuned: dict, steps: int) -> int | None:
    """The tuned config's place in guided's measurements when it is the default (1) or among the
    default's first ``steps`` neighbours (the first batch after the default); None otherwise."""
    if config_key(space[0]) == config_key(tuned):
        return 1
    near = guided._neighbours(space[0], space, {0})[:steps]
    keys = [config_key(space[i]) for i in near]
    k = config_key(tuned)
    return keys.index(k) + 2 if k in keys else None


def evaluate_entry(model, pr, sm_count: int, steps: int) -> dict | None:
    """One PerfDB entry's places (see the module docstring); None when its problem cannot be parsed
    or its tuned config is not in the solver's space."""
    p = cm.parse_problem_key(pr.problem_key)
    s = get_solver(pr.solver_id)
    if p is None:
        return None
    space = config_space(p, s)
    keys = [config_key(c) for c in space]
    if not space or config_key(pr.config) not in keys:
        return None
    tuned = keys.index(config_key(pr.config))
    order = model_order.order(space, space[0], model, p, s, sm_count)
    row = {"key": pr.problem_key, "solver": s.id, "space": len(space), "tuned_is_default": tuned == 0,
           "speedup": (pr.default_time_ms / pr.time_ms) if pr.default_time_ms else None,
           "model": order.index(tuned) + 1 if order is not None else None,
           "guided": guided_place(space, pr.config, steps), "random": (len(space) + 1) / 2, "pair": None}
    if tuned != 0 and pr.default_time_ms and pr.default_time_ms > pr.time_ms and order is not None:
        t = model.predict_ms(p, [(s, space[0]), (s, space[tuned])], sm_count)
        row["pair"] = t[1] < t[0]
    return row


def summary(rows: list[dict], within: int) -> dict:
    """Pooled figures of ``rows`` (those the model could order)."""
    rows = [r for r in rows if r["model"] is not None]
    if not rows:
        return {"entries": 0}
    sim = [r for r in rows if r["guided"] is not None]
    pairs = [r["pair"] for r in rows if r["pair"] is not None]
    moved = [r for r in rows if not r["tuned_is_default"]]
    return {
        "entries": len(rows), "mean_space": statistics.fmean(r["space"] for r in rows),
        "tuned_is_default": sum(r["tuned_is_default"] for r in rows) / len(rows),
        "model_median_place": statistics.median(r["model"] for r in rows),
        "model_mean_place": statistics.fmean(r["model"] for r in rows),
        "model_within": sum(r["model"] <= within for r in rows) / len(rows),
        "random_mean_place": statistics.fmean(r["random"] for r in rows),
        "non_default_entries": len(moved),
        "model_median_place_non_default": statistics.median(r["model"] for r in moved) if moved else None,
        "guided_simulable": len(sim) / len(rows),
        "guided_mean_place_simulable": statistics.fmean(r["guided"] for r in sim) if sim else None,
        "model_mean_place_simulable": statistics.fmean(r["model"] for r in sim) if sim else None,
        "model_not_later_than_guided_simulable": (sum(r["model"] <= r["guided"] for r in sim) / len(sim)
                                                  if sim else None),
        "pair_accuracy": sum(pairs) / len(pairs) if pairs else None, "pairs": len(pairs),
    }


def fmt(v, pct=False):
    if v is None:
        return "-"
    return f"{100 * v:.1f}%" if pct else (f"{v:.1f}" if isinstance(v, float) else str(v))


def markdown(results: dict, within: int) -> str:
    cols = [("entries", False), ("mean_space", False), ("tuned_is_default", True), ("model_median_place", False),
            ("model_mean_place", False), ("model_within", True), ("random_mean_place", False),
            ("model_median_place_non_default", False), ("guided_simulable", True),
            ("guided_mean_place_simulable", False), ("model_mean_place_simulable", False),
            ("model_not_later_than_guided_simulable", True), ("pair_accuracy", True)]
    out = ["# Tuned config's place in the model strategy's order, leave one preset out", "",
           f"Shipped DB, {results['perf_entries']} PerfDB entries (one tuned config per problem and solver, the "
           f"best of guided's {results['configs_tried']} tried). `model_within`: the tuned config within the model "
           f"order's first {within} (guided: always, by construction). Places are 1-based; the default is "
           "place 1 in both orders. Limits: see `bench/eval_tune_order.py`'s docstring.", "",
           "| held out | solver | " + " | ".join(c for c, _ in cols) + " |",
           "| --- | --- | " + " | ".join("---:" for _ in cols) + " |"]
    for held, by_solver in results["splits"].items():
        for solver, s in by_solver.items():
            out.append(f"| {held} | {solver} | " + " | ".join(fmt(s.get(c), p) for c, p in cols) + " |")
    for solver, s in results["pooled"].items():
        out.append(f"| **pooled** | {solver} | " + " | ".join(fmt(s.get(c), p) for c, p in cols) + " |")
    out += ["", f"Training: {results['train_seconds']:.0f} s for the six models; the shipped config-aware model "
            f"loads in {results['load_ms']:.1f} ms and orders a space in {results['order_ms_median']:.2f} ms "
            f"(median over the entries)."]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--out", default=None, help="folder for tune_order_eval.md and .json")
    ap.add_argument("--within", type=int, default=8, help="the budget model_within counts against (default 8)")
    ap.add_argument("--guided-steps", type=int, default=7,
                    help="neighbours of the default in guided's first step (the shipped DB's 8 configs: 7)")
    ap.add_argument("--heldout-model", default=None, metavar="PRESETS:FILE",
                    help="also write a config-aware model trained without these presets (comma-separated), "
                         "e.g. resnet50,inception_v3:bench/results/tune-order/heldout.tune.model.npz")
    args = ap.parse_args(argv)

    db = FindDB(args.db, readonly=True, immutable=True)
    sm_count = 132
    samples = cm.samples_from_db(db)
    perf = list(db.iter_perf(None))
    keys = {s.problem_key for s in samples}
    t_train = 0.0
    rows_by = defaultdict(lambda: defaultdict(list))
    order_ms = []
    for held in MODELS:
        test = preset_keys(held) & keys
        t0 = time.perf_counter()
        model = cm.train([s for s in samples if s.problem_key not in test], sm_count=sm_count, configs=True,
                         rank_rounds=0, source=f"all but {held}")
        t_train += time.perf_counter() - t0
        for pr in perf:
            if pr.problem_key in test:
                t0 = time.perf_counter()
                row = evaluate_entry(model, pr, sm_count, args.guided_steps)
                order_ms.append((time.perf_counter() - t0) * 1e3)
                if row is not None:
                    rows_by[held][row["solver"]].append(row)
        print(f"{held}: {sum(map(len, rows_by[held].values()))} entries", flush=True)
    splits = {h: {s: summary(r, args.within) for s, r in sorted(by.items())} for h, by in rows_by.items()}
    pooled_rows = defaultdict(list)
    for by in rows_by.values():
        for s, r in by.items():
            pooled_rows[s] += r
            pooled_rows["all"] += r
    pooled = {s: summary(r, args.within) for s, r in sorted(pooled_rows.items())}
    shipped = cm.tune_model_path_for(args.db)
    load_ms = None
    if shipped.is_file():
        t0 = time.perf_counter()
        cm.CostModel.load(shipped)
        load_ms = (time.perf_counter() - t0) * 1e3
    results = {"db": args.db, "perf_entries": len(perf),
               "configs_tried": sorted({pr.configs_tried for pr in perf}), "within": args.within,
               "guided_steps": args.guided_steps, "train_seconds": t_train, "load_ms": load_ms or float("nan"),
               "order_ms_median": statistics.median(order_ms) if order_ms else float("nan"),
               "splits": splits, "pooled": pooled,
               "rows": {h: {s: r for s, r in by.items()} for h, by in rows_by.items()}}
    if args.heldout_model:
        presets, _, path = args.heldout_model.partition(":")
        held = set().union(*(preset_keys(m) for m in presets.split(",")))
        model = cm.train([s for s in samples if s.problem_key not in held], sm_count=sm_count, configs=True,
                         rank_rounds=0, source=f"{Path(args.db).name} without presets {presets}")
        model.meta["heldout_presets"] = presets.split(",")
        model.save(path)
        results["heldout_model"] = {"presets": presets.split(","), "file": path, "version": model.version}
    md = markdown(results, args.within)
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "tune_order_eval.md").write_text(md)
        (out / "tune_order_eval.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
