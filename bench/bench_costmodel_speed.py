"""Speed of the learned cost model on the CPU: loading the shipped model file, and answering one problem.

One problem's answer is what immediate mode asks of the model on a miss: ``CostModel.predict_ms``
(the feature extraction for each (solver, config) of the problem, then the trees) and the ranking
of the solvers by the predicted times. For every problem of the FindDB (default: the shipped H100
DB), its solvers are those the DB measured for it (what a find ran on the GPU, cuDNN and the naive
reference solvers included), each at its default config (a miss has no tuned one; the default
configs are made beforehand, as ``find.predicted`` makes them outside the model). Also timed: the
same problems without the naive solvers (immediate mode's own candidate set), and the evaluator
before the exit tables (``CostModel.rows`` + ``_Trees.predict``, the heap descent) on the same
problems, for comparison.

Each problem is timed ``--repeats`` times in turn; the table gives the median and p90 over
problems of each problem's fastest repeat (the noise of a shared machine filtered out) and of every
repeat. The load time is ``CostModel.load`` of the model file: the first in the process and the
median of ``--loads`` more. No GPU. ``python bench/bench_costmodel_speed.py --out bench/results/costmodel-speed``.

``--scorer``: the exit tables scored in C (``native``: ``miofind._native``'s ``qs_score`` and
``qs_lookup``, the default where the extension is built) or with numpy alone (``numpy``: the model
loaded with ``MIOFIND_NATIVE=0``), or ``both``: one model of each, answering each problem in turn,
and a check that both give every problem (as the bench asks it, and at the DB's recorded configs)
the same times and the same order.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def default_config(solver, problem):
    try:
        return solver.default_config(problem.as_conv()) if solver.tunable else None
    except Exception:
        return None


def answer(model, problem, pairs):
    """The model's answer for one problem: predicted times and the solvers ranked (``CostModel.rank``:
    by the ranking forest where the model has one, else by the times)."""
    return model.rank(problem, pairs)[1]


def native_built() -> bool:
    """Whether ``miofind._native`` is built with the exit tables' functions."""
    try:
        from miofind import _native
    except ImportError:
        return False
    return hasattr(_native, "qs_score") and hasattr(_native, "qs_lookup")


def load(path, scorer):
    """``CostModel.load`` of ``path`` scoring in C (``native``) or with numpy (``MIOFIND_NATIVE=0`` while it loads)."""
    if scorer == "native":
        model = cm.CostModel.load(path)
        if model.trees.exits is not None and model.trees.exits.native is None:
            sys.exit("--scorer native: miofind._native is not built with qs_score (or MIOFIND_NATIVE=0)")
        return model
    old = os.environ.get("MIOFIND_NATIVE")
    os.environ["MIOFIND_NATIVE"] = "0"
    try:
        return cm.CostModel.load(path)
    finally:
        if old is None:
            del os.environ["MIOFIND_NATIVE"]
        else:
            os.environ["MIOFIND_NATIVE"] = old


def same_answers(a, b, cases) -> int:
    """How many of ``cases`` models ``a`` and ``b`` answer with equal times and the same order."""
    return sum(a.rank(p, pairs) == b.rank(p, pairs) for p, pairs in cases)


def answer_before(model, problem, pairs):
    """The same through the feature rows and the heap descent (the evaluator before the exit tables)."""
    x, base = model.rows(problem, pairs)
    times = (10.0 ** (base + model.trees.predict(x))).tolist()
    return sorted(range(len(times)), key=times.__getitem__)


def time_problems(fn, model, cases, repeats, others=()):
    """Per problem, every repeat's time in µs: [problems, repeats]; with ``others`` (more models),
    each problem is answered by ``model`` and then by each of them in turn (the machine's load falls
    on all alike), and a list of such arrays comes back, ``model``'s first."""
    models = [model, *others]
    for m in models:
        for p, pairs in cases[:50]:
            fn(m, p, pairs)   # warm: the joined table rows of each (solver, config) are made once
    out = np.empty((len(models), len(cases), repeats))
    clock = time.perf_counter_ns
    for r in range(repeats):
        for i, (p, pairs) in enumerate(cases):
            for j, m in enumerate(models):
                t0 = clock()
                fn(m, p, pairs)
                out[j, i, r] = (clock() - t0) / 1e3
    return list(out) if others else out[0]


def summary(samples):
    best = samples.min(axis=1)
    return {"median_us": float(np.median(best)), "p90_us": float(np.percentile(best, 90)),
            "median_us_all_repeats": float(np.median(samples)), "p90_us_all_repeats": float(np.percentile(samples, 90))}


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--model", default=None, help="model file (default: the one next to --db)")
    ap.add_argument("--baseline", default=None,
                    help="a second model file, loaded and timed alternately with --model in the same run")
    ap.add_argument("--repeats", type=int, default=5, help="times each problem is answered (default 5)")
    ap.add_argument("--loads", type=int, default=10, help="loads of the model file after the first (default 10)")
    ap.add_argument("--before-repeats", type=int, default=3, help="repeats for the evaluator before (0: skip)")
    ap.add_argument("--scorer", choices=("native", "numpy", "both"), default=None,
                    help="the exit tables scored in C, with numpy, or both alternately (default: native where "
                         "miofind._native is built, else numpy)")
    ap.add_argument("--out", default=None, help="folder for speed.md and speed.json")
    args = ap.parse_args(argv)
    if args.scorer is None:
        args.scorer = "native" if native_built() else "numpy"
    scorers = ("native", "numpy") if args.scorer == "both" else (args.scorer,)
    for name in ("repeats", "loads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    model_path = Path(args.model) if args.model else cm.model_path_for(args.db)
    if not model_path.is_file():
        ap.error(f"--model: no model file at {model_path}")

    base_path = Path(args.baseline) if args.baseline else None
    if base_path is not None and not base_path.is_file():
        ap.error(f"--baseline: no model file at {base_path}")

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    model = load(model_path, scorers[0])
    first_load_ms = (time.perf_counter() - t0) * 1e3
    baseline = load(base_path, scorers[0]) if base_path else None
    loads, base_loads = [], []
    for _ in range(args.loads):
        for path, into in ((model_path, loads), (base_path, base_loads)):
            if path is not None:
                t0 = time.perf_counter()
                load(path, scorers[0])
                into.append((time.perf_counter() - t0) * 1e3)
    # the models timed in turn: (row suffix, model); the first is ``model``
    label = {"native": "C scorer", "numpy": "numpy scorer"}
    timed = [("" if len(scorers) == 1 else f", {label[scorers[0]]}", model)]
    timed += [(f", {label[s]} (alternating)", load(model_path, s)) for s in scorers[1:]]
    if baseline is not None:
        timed += [(f", baseline{'' if len(scorers) == 1 else ' ' + label[s]} (alternating)",
                   baseline if s == scorers[0] else load(base_path, s)) for s in scorers]

    db = FindDB(args.db, readonly=True, immutable=True)
    recorded = defaultdict(list)
    for r in db.iter_records(None):
        recorded[r.problem_key].append((r.solver_id, r.config))
    db.close()
    cases, cases_no_naive, cases_recorded = [], [], []
    for key in sorted(recorded):
        p = cm.parse_problem_key(key)
        solvers = [get_solver(s) for s, _ in recorded[key]]
        pairs = [(s, default_config(s, p)) for s in solvers]
        cases.append((p, pairs))
        cases_recorded.append((p, [(s, c) for s, (_, c) in zip(solvers, recorded[key])]))
        own = [(s, c) for s, c in pairs if not s.is_reference]
        if own:
            cases_no_naive.append((p, own))

    agree = None
    if args.scorer == "both":   # the C scorer's answers against numpy's: times and order alike
        agree = {name: [same_answers(timed[0][1], timed[1][1], c), len(c)] for name, c in (
            ("all measured solvers", cases), ("without the naive solvers", cases_no_naive),
            ("all measured solvers at their recorded configs", cases_recorded))}
    rows = {}
    for name, c in (("all measured solvers", cases), ("without the naive solvers", cases_no_naive)):
        got = time_problems(answer, timed[0][1], c, args.repeats, [m for _, m in timed[1:]])
        for (suffix, _), samples in zip(timed, got if len(timed) > 1 else [got]):
            rows[name + suffix] = (c, summary(samples))
    if args.before_repeats > 0:
        rows["all measured solvers, evaluator before"] = (
            cases, summary(time_problems(answer_before, model, cases, args.before_repeats)))
    load_after = os.getloadavg()

    result = {
        "model": str(model_path.relative_to(ROOT) if model_path.is_relative_to(ROOT) else model_path),
        "model_version": model.version, "file_bytes": model_path.stat().st_size,
        "trees": len(model.trees.roots), "rank_trees": model.rank_trees, "depth": model.trees.depth,
        "baseline": str(base_path) if base_path else None,
        "baseline_version": baseline.version if baseline else None,
        "baseline_trees": len(baseline.trees.roots) if baseline else None,
        "baseline_load_ms_median": statistics.median(base_loads) if base_loads else None,
        "exit_tables": model.trees.exits is not None,
        "scorer": args.scorer, "native_built": native_built(), "same_answers": agree,
        "first_load_ms": first_load_ms, "load_ms_median": statistics.median(loads), "load_ms_max": max(loads),
        "repeats": args.repeats, "before_repeats": args.before_repeats,
        "cpu": cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
        "loadavg_before": load_before, "loadavg_after": load_after,
        "sets": {name: {"problems": len(c), "mean_solvers": statistics.fmean(len(x[1]) for x in c), **s}
                 for name, (c, s) in rows.items()},
    }
    lines = [
        f"model {result['model']} (version {model.version}, {result['file_bytes'] / 1e6:.2f} MB, "
        f"{result['trees']} trees of depth {result['depth']}, {model.rank_trees} of them the ranking forest); {result['cpu']}, {result['cpus']} CPUs, "
        f"Python {result['python']}, numpy {result['numpy']}; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after",
        "",
        f"load: first {first_load_ms:.1f} ms, median of {args.loads} more {result['load_ms_median']:.1f} ms "
        f"(max {result['load_ms_max']:.1f} ms); target <= 100 ms"
        + (f"; baseline {base_path} (version {baseline.version}, {result['baseline_trees']} trees): median "
           f"{result['baseline_load_ms_median']:.1f} ms, loaded alternately" if baseline else ""),
        "",
        "| solvers per problem | problems | mean solvers | median µs | p90 µs | median µs, all repeats "
        "| p90 µs, all repeats |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, s in result["sets"].items():
        lines.append(f"| {name} | {s['problems']} | {s['mean_solvers']:.2f} | {s['median_us']:.1f} | {s['p90_us']:.1f} "
                     f"| {s['median_us_all_repeats']:.1f} | {s['p90_us_all_repeats']:.1f} |")
    lines += ["", f"median and p90 over problems of each problem's fastest of {args.repeats} repeats "
                  f"({args.before_repeats} for the evaluator before), and of every repeat; target <= 50 µs per problem"]
    lines += ["", f"scorer: {args.scorer} (miofind._native with qs_score {'built' if native_built() else 'not built'})"]
    if agree:
        lines += [f"C and numpy scorers, equal times and order: {a} of {n} problems ({name})"
                  for name, (a, n) in agree.items()]
    text = "\n".join(lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        cmd = " ".join(["python bench/bench_costmodel_speed.py", *(argv if argv is not None else sys.argv[1:])])
        (out / "speed.md").write_text(f"# Cost model speed\n\n`{cmd}`\n\n"
                                      + text + "\n")
        (out / "speed.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
