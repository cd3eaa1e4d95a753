"""Immediate mode on models no preset holds: issue 20's new-user trial, kept as a test set the shipped DB never trains on.

``problems`` (needs torch and torchvision, no GPU): the convolution layers of torchvision models
(``miofind.torch.problems`` on the meta device), for each batch and kind (``--kinds``: dtype and layout, default
FP32 NCHW with TF32 off and FP16 NHWC), a seeded sample of at most ``--layers`` distinct layers per model (0: all),
as MIOpenDriver lines of all three directions (``miofind tune --file LINES --no-tune`` finds them on the GPU).
``--exclude-db`` leaves out the problems a FindDB file holds (the test set, when the lines are for the shipped DB);
``--keys`` writes which model each problem key came from. (Call 2 of session-nov27b drew its test set with an
earlier version of this sampling, over both kinds at once; its ``lines.txt`` is the list, and its keys files,
which that version wrote wrong for B and W, are corrected in ``call2/keys.json`` by ``call2/rekey.py``.)

``score`` (CPU): for every problem of the measured DB (a benchmark find of each, on an empty user DB with no
system DB), what immediate mode would have answered with the shipped DB and its model:
- the shipped DB holds trusted records of the problem: its fastest record answers ("DB");
- else the shipped cost model ranks the measured solvers at their default configs ("model"), and today's
  plain predictor (the nearest shipped problem FLOP-scaled, else the roofline model) beside it; a problem of a
  kind the model was not trained on is answered by today's predictor, as immediate mode does ("fallback").
Each pick is scored against the measured DB: top-1, mean and worst slowdown, median relative error of the
stated times. Only solvers the measured find verified are ranked.

    python bench/unseen_models.py problems --layers 12 --seed 1 --keys keys.json > lines.txt
    python bench/unseen_models.py problems --models resnext101_32x8d --layers 0 --batch 32 --batch 1 \
        --kinds FP16:NHWC,TF32:NCHW,FP32:NCHW --exclude-db unseen.sqlite.gz > lines.txt
    python bench/unseen_models.py score --measured unseen.sqlite --keys keys.json [--db finddb/sm_90-132.sqlite]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

MODELS = ["googlenet", "densenet121", "alexnet", "resnext50_32x4d", "efficientnet_b0", "convnext_tiny",
          "shufflenet_v2_x1_0", "mnasnet1_0"]


def _kinds(spec: str):
    """``FP16:NHWC,TF32:NCHW,...`` as (dtype, channels_last, tf32)."""
    out = []
    for part in spec.split(","):
        dt, layout = part.split(":")
        out.append(("FP32" if dt == "TF32" else dt, layout == "NHWC", dt == "TF32"))
    return out


def problems(args) -> None:
    import gzip
    import sqlite3

    from sweep_problems import driver_line

    from miofind.torch.problems import model_problems

    excluded: set[str] = set()
    for f in args.exclude_db or ():
        path = f
        if f.endswith(".gz"):
            path = f"/tmp/{Path(f).name[:-3]}"
            Path(path).write_bytes(gzip.decompress(Path(f).read_bytes()))
        excluded |= {k for (k,) in sqlite3.connect(path).execute("select distinct problem_key from find_records")}
    keys: dict[str, str] = {}
    lines = []
    for batch in args.batch:
        for dt, cl, tf32 in _kinds(args.kinds):
            for name in args.models.split(","):
                try:
                    found = model_problems(f"torchvision.models.{name}", (batch, 3, 224, 224), dtype=dt,
                                           channels_last=cl, tf32=tf32)
                except ValueError as e:
                    print(f"{name}: skipped: {e}", file=sys.stderr)
                    continue
                # the plain forward of each layer (a MIOpenDriver line states no fused epilogue: the fused forward
                # problems model_problems also gives are left to tune --torch-model)
                layers = sorted({p.key(): p for p in found if p.direction == "F" and not p.fused}.items())
                if args.layers:   # a seeded sample of the model's distinct layers (the same draw per kind)
                    draw = random.Random(f"{args.seed}-{name}").sample(range(len(layers)), min(args.layers, len(layers)))
                    layers = [layers[i] for i in sorted(draw)]
                for _, p in layers:
                    dirs = "".join(d for d in "FBW" if (k := p.with_direction(d).key()) not in excluded and k not in keys)
                    if not dirs:
                        continue
                    lines.append(f"# {name}")
                    lines.append(driver_line(p, dirs))
                    for d in dirs:
                        keys[p.with_direction(d).key()] = name
    print("\n".join(lines))
    if args.keys:
        Path(args.keys).write_text(json.dumps(keys, indent=0, sort_keys=True) + "\n")


def _fastest(recs):
    return min(recs, key=lambda r: r.time_ms)


def score(args) -> None:
    from eval_costmodel import evaluate_split

    from miofind import costmodel as cm
    from miofind.db import FindDB
    from miofind.registry import get_solver
    from miofind.trust import is_trusted

    measured = FindDB(args.measured, readonly=True, immutable=True)
    shipped = FindDB(args.db, readonly=True, immutable=True)
    model = cm.CostModel.load(args.model or cm.model_path_for(args.db))
    origin = json.loads(Path(args.keys).read_text()) if args.keys else {}
    finds = defaultdict(list)
    for r in measured.iter_records(None):
        if r.verified and r.time_ms and r.time_ms > 0:
            finds[r.problem_key].append(r)
    finds = {k: v for k, v in finds.items() if len(v) >= 2}
    ship = defaultdict(list)
    for r in shipped.iter_records(None):
        if r.problem_key in finds and r.verified and is_trusted(r, get_solver(r.solver_id), "13.0")[0]:
            ship[r.problem_key].append(r)
    train = defaultdict(list)    # today's predictor reads the shipped DB's records
    for r in shipped.iter_records(None):
        train[r.problem_key].append(r)
    rows = []
    predicted = [k for k in finds if k not in ship]
    fell_back: set[str] = set()   # outside the model's training kinds (grouped, not depthwise): today's answers
    by_key = dict(evaluate_split(predicted, train, finds, model, args.sm_count, fell_back))
    for key, recs in sorted(finds.items()):
        best = _fastest(recs).time_ms
        times = {r.solver_id: r.time_ms for r in recs}
        p = cm.parse_problem_key(key)
        row = {"key": key, "model": origin.get(key, "?"), "dtype": p.dtype, "dir": p.direction, "best": best}
        if key in ship:
            offered = [r for r in ship[key] if r.solver_id in times]
            pick = _fastest(offered).solver_id if offered else None
            row.update(source="DB", pick=pick, slowdown=times[pick] / best if pick else None)
        else:
            sol_rows = by_key[key]
            mine = min(sol_rows, key=lambda x: x[4])
            today = min(sol_rows, key=lambda x: x[3])
            row.update(source="fallback" if key in fell_back else "model", pick=mine[0], slowdown=mine[1] / best, today_pick=today[0],
                       today_slowdown=today[1] / best,
                       rel_err=statistics.median(abs(x[2] / x[1] - 1) for x in sol_rows),
                       today_rel_err=statistics.median(abs(x[3] / x[1] - 1) for x in sol_rows),
                       fastest=_fastest(recs).solver_id)
        rows.append(row)
    md = render(rows, args)
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "unseen_models.md").write_text(md)
        (out / "unseen_models.json").write_text(json.dumps(rows, indent=0) + "\n")


def _stats(rows, slow="slowdown"):
    s = [r[slow] for r in rows if r[slow] is not None]
    if not s:
        return "| 0 | | | |"
    top = sum(1 for v in s if v <= 1.0 + 1e-12) / len(s)
    return f"| {len(s)} | {top:.1%} | {statistics.fmean(s) - 1:.2%} | {max(s):.2f}x |"


def render(rows, args) -> str:
    db_rows = [r for r in rows if r["source"] == "DB"]
    mod = [r for r in rows if r["source"] == "model"]
    fb = [r for r in rows if r["source"] == "fallback"]
    out = ["# Immediate mode on models no preset holds (issue 20's new-user trial)", "",
           f"`python bench/unseen_models.py score --measured {args.measured} --db {args.db}`", "",
           f"{len(rows)} problems measured (benchmark find of every solver, cuDNN's plans included; verified records); "
           f"the shipped DB held {len(db_rows)}, the model answered {len(mod)}, and {len(fb)} were of a kind the model "
           "was not trained on (grouped, not depthwise: the shipped DB has none), which today's predictor answers, as immediate "
           "mode does. Top-1: the pick is the measured fastest; "
           "slowdown: the pick's measured time over the fastest.", "",
           "| answered by | problems | top-1 | mean slowdown | worst |", "| --- | ---: | ---: | ---: | ---: |",
           "| shipped DB " + _stats(db_rows), "| learned model " + _stats(mod),
           "| today's predictor, same problems " + _stats(mod, "today_slowdown"),
           "| today's predictor, the kinds the model was not trained on " + _stats(fb),
           "| all problems immediate mode answers (DB, model, fallback) " + _stats(rows), ""]
    if mod:
        out.append(f"Median relative error of the stated times (model-answered problems): model "
                   f"{statistics.median(r['rel_err'] for r in mod):.1%}, today's predictor "
                   f"{statistics.median(r['today_rel_err'] for r in mod):.1%}.")
        out.append("")
    out += ["Learned model, by source model, dtype and direction:", "",
            "| model | dtype-dir | problems | top-1 | mean slowdown | worst |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    groups = defaultdict(list)
    for r in mod:
        groups[(r["model"], f"{r['dtype']}-{r['dir']}")].append(r)
    for (m, g), rs in sorted(groups.items()):
        out.append(f"| {m} | {g} " + _stats(rs))
    out += ["", "Today's predictor on the kinds the model was not trained on:", "",
            "| model | dtype-dir | problems | top-1 | mean slowdown | worst |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    groups = defaultdict(list)
    for r in fb:
        groups[(r["model"], f"{r['dtype']}-{r['dir']}")].append(r)
    for (m, g), rs in sorted(groups.items()):
        out.append(f"| {m} | {g} " + _stats(rs))
    out += ["", "Worst model picks:", "", "| key | pick | fastest | slowdown |", "| --- | --- | --- | ---: |"]
    for r in sorted(mod, key=lambda r: -r["slowdown"])[:15]:
        out.append(f"| {r['key']} | {r['pick']} | {r['fastest']} | {r['slowdown']:.2f}x |")
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("problems")
    a.add_argument("--models", default=",".join(MODELS))
    a.add_argument("--layers", type=int, default=12, help="at most this many distinct layers per model (0: all)")
    a.add_argument("--batch", type=int, action="append", help="batch size(s), in order (default 32)")
    a.add_argument("--kinds", default="FP32:NCHW,FP16:NHWC",
                   help="dtype:layout list, in order (TF32: FP32 data with TF32 math)")
    a.add_argument("--exclude-db", action="append", help="leave out the problems this FindDB file (.gz too) holds")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--keys", default=None, help="write {problem key: model} here")
    s = sub.add_parser("score")
    s.add_argument("--measured", required=True)
    s.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    s.add_argument("--model", default=None, help="model file (default: the one next to --db)")
    s.add_argument("--keys", default=None, help="a {problem key: model} file (``problems --keys``)")
    s.add_argument("--sm-count", type=int, default=132)
    s.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.cmd == "problems" and not args.batch:
        args.batch = [32]
    problems(args) if args.cmd == "problems" else score(args)


if __name__ == "__main__":
    main()
