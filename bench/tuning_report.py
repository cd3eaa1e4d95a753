"""Default against tuned configs, from a PerfDB: every PerfRecord of the given solvers, with the
default config's time measured in the same re-measurement as the tuned one (tuner.py).

    python3 bench/tuning_report.py DB_URL_OR_PATH [--solver ConvImplicitGemmFwd ...] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from miofind.db import FindDB  # noqa: E402
from report import gmean  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--solver", action="append", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = []
    with FindDB(a.db, readonly=True) as db:
        for r in db.iter_perf():
            if a.solver and r.solver_id not in a.solver:
                continue
            rows.append(r)
    lines = ["| problem | solver | default ms | tuned ms | speed-up | configs tried | tune s | tuned config |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    ratios, better, same = [], 0, 0
    for r in rows:
        d = r.default_time_ms
        sp = d / r.time_ms if d else float("nan")
        if d:
            ratios.append(sp)
            better += sp > 1.02
            same += 0.98 <= sp <= 1.02
        cfg = ",".join(f"{k}={v}" for k, v in r.config.items())
        lines.append(f"| `{r.problem_key}` | {r.solver_id} | {d if d is None else f'{d:.4f}'} | {r.time_ms:.4f} | "
                     f"{sp:.2f}x | {r.configs_tried} | {r.tune_seconds:.1f} | {cfg} |")
    gm = gmean(ratios)
    summary = (f"{len(rows)} tuned problem/solver pairs; tuned faster than default (>2%) on {better}, within 2% on "
               f"{same}, slower on {len(ratios) - better - same}; geometric-mean speed-up {gm:.3f}x")
    text = "\n".join(lines) + "\n\n" + summary + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
        with open(os.path.splitext(a.out)[0] + ".json", "w") as fh:
            json.dump({"summary": summary, "geomean_speedup": gm, "better": better, "same": same,
                       "rows": [{"key": r.problem_key, "solver": r.solver_id, "default_ms": r.default_time_ms,
                                 "tuned_ms": r.time_ms, "config": r.config, "tried": r.configs_tried,
                                 "seconds": r.tune_seconds} for r in rows]}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
