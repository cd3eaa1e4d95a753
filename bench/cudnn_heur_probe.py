"""What cuDNN's planning costs a find per heuristic mode set: for each problem key given, a fresh graph
(``cudnn_base.PlanGraph``) planned with heuristic modes A only and with A + FALLBACK (miofind's
``HEURISTIC_MODES``), alternately; the wall ms of making the graph (IR, validation, planning, listing), of building
its first two usable plans (what a find measures at once), the number of plans listed, and whether the first two
plans are the same under both mode sets. A diagnosis for a cheaper find; needs a GPU and the cuDNN frontend.

    python bench/cudnn_heur_probe.py KEYS_FILE [KEYS_FILE ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("keys", nargs="+")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import cupy

    from miofind.problem import ProblemDescription
    from miofind.solvers import cudnn_base as cb

    cupy.cuda.Device(0).use()
    keys = [k for f in args.keys for k in Path(f).read_text().split()]
    rows = []
    for i, key in enumerate(keys):
        p = ProblemDescription.from_key(key).as_conv()
        row = {"key": key}
        sets = [("A", ("A",)), ("A+FALLBACK", ("A", "FALLBACK"))]
        for name, modes in (sets if i % 2 == 0 else sets[::-1]):    # alternately first
            cb.HEURISTIC_MODES = modes
            t0 = time.perf_counter()
            g = cb.PlanGraph(p, 0)
            t1 = time.perf_counter()
            first = []
            for pl in g.plans:
                if len(first) >= 2:
                    break
                if g.build(pl).usable:
                    first.append(pl.name)
            t2 = time.perf_counter()
            row[name] = {"graph_ms": (t1 - t0) * 1e3, "first_two_ms": (t2 - t1) * 1e3, "plans": len(g.plans),
                         "first_two": first}
        row["same_first_two"] = row["A"]["first_two"] == row["A+FALLBACK"]["first_two"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    rows = rows[2:]     # the first problems pay the library's first use
    for name in ("A", "A+FALLBACK"):
        print(f"{name}: graph {statistics.median(r[name]['graph_ms'] for r in rows):.2f} ms median "
              f"({sum(r[name]['graph_ms'] for r in rows):.0f} ms total), first two plans "
              f"{statistics.median(r[name]['first_two_ms'] for r in rows):.2f} ms median "
              f"({sum(r[name]['first_two_ms'] for r in rows):.0f} ms total), plans listed "
              f"{statistics.median(r[name]['plans'] for r in rows):.0f} median")
    print(f"same first two plans in {sum(r['same_first_two'] for r in rows)} of {len(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
