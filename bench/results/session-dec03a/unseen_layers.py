"""Cost models against random layers neither was trained on: each model file ranks the measured solvers of every
problem of the given FindDBs (default configs, as on a DB miss), scored against those DBs' times (top-1, mean and
worst slowdown of the pick, median relative error; ``costmodel.ranking_metrics``), pooled and per dtype x direction.
Problems a model does not cover (``CostModel.supports``) are counted apart; ``--common``: only the problems every model
given covers, for a like-for-like table. ``--keep K``: also what a find's first measurement would leave out under
MIOFIND_PREDICT_KEEP=K and MIOFIND_PREDICT_DEFER=2 (``find.predicted_deferrals`` itself, asked with the model file as
the one next to a system DB: the losers predicted at least 2x the fastest, their solver's own factor where lower, then
every cuDNN candidate and the own ones predicted fastest up to K in all, at least one own; candidates the model does
not know are measured at once), and how often the measured fastest is among those left to the background.

``python bench/results/session-dec03a/unseen_layers.py --db A.sqlite [--db B.sqlite] MODEL.npz [MODEL.npz ...]``
"""
import argparse
import sys
from types import SimpleNamespace
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.device import DeviceInfo  # noqa: E402
from miofind.find import predicted_deferrals  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132)
ap = argparse.ArgumentParser()
ap.add_argument("--db", action="append", required=True)
ap.add_argument("--common", action="store_true")
ap.add_argument("--keep", type=int, default=0)
ap.add_argument("models", nargs="+")
args = ap.parse_args()

finds = defaultdict(list)
for path in args.db:
    for r in FindDB(path, readonly=True, immutable=True).iter_records(None):
        finds[r.problem_key].append(r)
print(f"{len(finds)} problems, {sum(map(len, finds.values()))} records ({', '.join(args.db)})")
models = {path: cm.CostModel.load(path) for path in args.models}
if args.common:
    finds = {k: v for k, v in finds.items()
             if all(m.supports(cm.parse_problem_key(k), [r.solver_id for r in v]) for m in models.values())}
    print(f"--common: {len(finds)} problems every model covers")
for path, model in models.items():
    groups, skipped = defaultdict(list), 0
    for key, recs in finds.items():
        p = cm.parse_problem_key(key)
        solvers = [get_solver(r.solver_id) for r in recs]
        if len(recs) < 2 or not model.supports(p, [s.id for s in solvers]):
            skipped += 1
            continue
        times, order = model.rank(p, [(s, cm.default_config(s, p)) for s in solvers])
        place = {i: j for j, i in enumerate(order)}
        rows = [(r.time_ms, t, place[i]) for i, (r, t) in enumerate(zip(recs, times))]
        groups[f"{p.dtype}-{p.direction}"].append(rows)
        groups["all"].append(rows)
    print(f"\n{path} ({model.version}): {len(groups['all'])} problems ranked, {skipped} not covered or single")
    print("| group | problems | top-1 | mean slowdown | worst | median rel. err. |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for g in sorted(groups, key=lambda g: (g == "all", g)):
        m = cm.ranking_metrics(groups[g])
        print(f"| {g} | {m['problems']} | {100 * m['top1']:.1f}% | {100 * m['mean_slowdown']:.2f}% | "
              f"{m['worst_slowdown']:.2f}x | {100 * m['median_rel_err']:.1f}% |")
    if args.keep:
        # find.predicted_deferrals itself, with this model as the one next to a system DB of the same name
        dbs = SimpleNamespace(system=SimpleNamespace(path=Path(path).with_name(
            Path(path).name.removesuffix(cm.MODEL_SUFFIX) + ".sqlite")))
        probs = postponed = 0
        slow = []
        for key, recs in finds.items():
            p = cm.parse_problem_key(key)
            recs = [r for r in recs if "Naive" not in r.solver_id]
            solvers = [get_solver(r.solver_id) for r in recs]
            if sum(model.supports(p, (sv.id,)) for sv in solvers) < 2:   # nothing to rank: all measured at once
                continue
            losers, surplus = predicted_deferrals(p, dbs, DEV, solvers, 2.0, args.keep, {})
            probs += 1
            fastest = min(r.time_ms for r in recs)
            first = min(r.time_ms for r in recs if r.solver_id not in losers and r.solver_id not in surplus)
            postponed += first > fastest
            slow.append(first / fastest)
        print(f"KEEP={args.keep}, DEFER=2: {probs} problems; the measured fastest left to the background in "
              f"{postponed} ({100 * postponed / max(probs, 1):.1f}%); the first answer's mean slowdown "
              f"{100 * (sum(slow) / max(len(slow), 1) - 1):.2f}%, worst {max(slow, default=1):.2f}x")
