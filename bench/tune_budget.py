"""What a tighter tuning budget would have kept, from the searches of one wide tune (``miofind tune --json-out``:
each solver's ``trace`` and ``checks``, replayed by ``miofind.tuning.replay.replay_trace``).

For each budget (``--budgets``: max_configs/patience[/max_seconds], e.g. 16/8 is ``miofind tune``'s default) and each
tuned solver: the geomean over problems of the best one-shot time the budget reaches over the wide run's best, how
many problems it reaches within 2% of it, the configs measured and the search's seconds (summed over problems; the
tuner's re-measure of the near-best configs and the find after it are not in them). The run's own budget must be at
least as wide as every budget asked (a trace answers tighter budgets only).

    python bench/tune_budget.py tune.json [more.json ...] --budgets 16/8,48/16,96/24,400/32,400/100 --out budget.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miofind.tuning.replay import replay_trace  # noqa: E402


def load(path: str) -> dict:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
        return json.load(fh)


def parse_budget(text: str) -> dict:
    parts = text.split("/")
    if len(parts) not in (2, 3):
        raise SystemExit(f"--budgets: {text!r} is not max_configs/patience[/max_seconds]")
    out = {"max_configs": int(parts[0]), "patience": int(parts[1])}
    if len(parts) == 3:
        out["max_seconds"] = float(parts[2])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="miofind tune --json-out files (.gz read too)")
    ap.add_argument("--budgets", default="16/8,48/8,48/16,96/24,400/16,400/32,400/48,400/100")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    budgets = [parse_budget(b) for b in a.budgets.split(",")]
    rows = defaultdict(lambda: defaultdict(list))      # solver -> budget index -> [(ratio, tried, seconds)]
    problems = defaultdict(int)
    for path in a.runs:
        run = load(path)
        opts = run["options"]
        for o in run["outcomes"]:
            for s in o.get("solvers", []):
                trace, checks = s.get("trace") or [], s.get("checks") or []
                if s.get("status") != "tuned" or not trace:
                    continue
                full = replay_trace(trace, checks)
                if full["best_ms"] is None:
                    continue
                problems[s["solver_id"]] += 1
                ran = s.get("budget") or opts       # the solver's own budget where it widened the run's
                for i, b in enumerate(budgets):
                    kw = {"max_seconds": ran.get("max_seconds"), **b}
                    got = replay_trace(trace, checks, run_options=ran, **kw)
                    ratio = got["best_ms"] / full["best_ms"] if got["best_ms"] else math.inf
                    rows[s["solver_id"]][i].append((ratio, got["tried"], got["seconds"]))
    lines = [f"# What a tighter budget keeps: {', '.join(Path(p).name for p in a.runs)}", "",
             "best one-shot time a budget reaches / the wide run's best (geomean over problems); within 2%: problems "
             "it reaches within 2% of that best; configs and search seconds summed over problems.", "",
             "| solver | problems | budget (configs/patience[/s]) | best / wide best | within 2% | configs "
             "| search s |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for sid in sorted(rows):
        for i, b in enumerate(budgets):
            got = rows[sid][i]
            g = math.exp(sum(math.log(r) for r, _, _ in got) / len(got)) if all(r < math.inf for r, _, _ in got) \
                else math.inf
            near = sum(1 for r, _, _ in got if r <= 1.02)
            name = f"{b['max_configs']}/{b['patience']}" + (f"/{b['max_seconds']:g}" if "max_seconds" in b else "")
            lines.append(f"| {sid} | {problems[sid]} | {name} | {g:.3f} | {near} | {sum(t for _, t, _ in got)} | "
                         f"{sum(s for _, _, s in got):.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
