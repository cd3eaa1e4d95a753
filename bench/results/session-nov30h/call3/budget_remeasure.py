"""Session nov30h, call 3: the configs each tuning budget would have kept (bench/tune_budget.py's replay of a wide
tune's traces), measured again side by side, so that the comparison is free of the wide run's selection bias (its
best is the least of many one-shot times). Per problem of each --json-out file and each tuned solver: the best config
of every budget, each measured by the tuner's own measurer (GpuMeasurer: the find's timing, 3 warm-ups, 10 runs), in
--reps passes in alternating order; a config's time is the median of its passes. Prints per budget the geomean over
problems of its config's time over the widest budget's.

    python bench/results/session-nov30h/call3/budget_remeasure.py tune_w.json [...] --budgets 16/8,...,400/100
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from tune_budget import load, parse_budget  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--budgets", default="16/8,48/16,96/24,400/32,400/48,400/100")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    from miofind.db.findb import config_key
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.replay import replay_trace
    from miofind.tuning.tuner import GpuMeasurer

    budgets = [parse_budget(b) for b in a.budgets.split(",")]
    names = [b.replace("/", "/") for b in a.budgets.split(",")]
    rows = []
    for path in a.runs:
        run = load(path)
        opts = run["options"]
        for o in run["outcomes"]:
            p = ProblemDescription.from_key(o["key"])
            for s in o.get("solvers", []):
                if s.get("status") != "tuned" or not s.get("trace"):
                    continue
                solver = get_solver(s["solver_id"])
                picks = []
                for b in budgets:
                    got = replay_trace(s["trace"], s["checks"], run_options=opts,
                                       **{"max_seconds": opts.get("max_seconds"), **b})
                    picks.append(got["best_config"])
                uniq = []
                for c in picks:
                    if c is not None and config_key(c) not in {config_key(u) for u in uniq}:
                        uniq.append(c)
                m = GpuMeasurer(p)
                passes = {config_key(c): [] for c in uniq}
                for r in range(a.reps):
                    order = uniq if r % 2 == 0 else uniq[::-1]
                    for c, (t, _) in zip(order, m.evaluate(solver, order, warmup=3, iters=10)):
                        passes[config_key(c)].append(t)
                med = {k: statistics.median(v) for k, v in passes.items()}
                times = [med[config_key(c)] if c is not None else math.inf for c in picks]
                rows.append({"key": o["key"], "solver": solver.id, "budgets": names, "configs": picks,
                             "times_ms": times, "passes": passes})
                print(f"{solver.id} {o['key'][:60]}: " + " ".join(f"{n}={t * 1e3:.1f}" for n, t in zip(names, times)),
                      flush=True)
    for sid in sorted({r["solver"] for r in rows}):
        rs = [r for r in rows if r["solver"] == sid and all(t < math.inf for t in r["times_ms"])]
        parts = []
        for i, n in enumerate(names):
            g = math.exp(sum(math.log(r["times_ms"][i] / r["times_ms"][-1]) for r in rs) / len(rs))
            worse = sum(1 for r in rs if r["times_ms"][i] > 1.02 * r["times_ms"][-1])
            parts.append(f"{n}: {g:.3f} ({worse} >2% slower)")
        print(f"{sid}, {len(rs)} problems, re-measured time / the widest budget's config: " + "; ".join(parts))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
