"""A find's first answer against its final one, on the GPU (issues 18 and 20): what the shipped cost model's
deferrals (MIOFIND_PREDICT_KEEP, MIOFIND_PREDICT_DEFER) cost the answers of problems no DB holds.

Finds the problems of a file of MIOpenDriver lines in normal mode, in MIOFIND_SPECIALIZE=background (the default),
into the user FindDB ``MIOFIND_DB`` (give an empty one) with the shipped DB beneath, in chunks: each problem's first
answer (the solvers measured at once, with their times, and those the find left to the background), then
``tiered.wait`` for the chunk's background jobs (deferred solvers, specialised builds), then each problem found
again from the user DB: the final answer, every solver measured. A problem whose first answer's solver is not the
final fastest had its fastest postponed; its first answer's slowdown is that solver's final time over the fastest.

    MIOFIND_DB=/tmp/keep.sqlite python bench/keep_check.py --file layers.txt --out keep.json [--limit N]
        [--seconds S] [--chunk 16] [--wait 120]

Writes one JSON object per problem (key, first: [[solver, ms]], deferred: [solver], predicted_deferred,
surplus_deferred, final: [[solver, ms]], first_ms: the find's wall time) and prints a summary. Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def summary(rows: list[dict]) -> str:
    """The summary of ``rows`` (this script's output objects): problems with a deferral, the fastest postponed, the
    first answer's mean and worst slowdown against the final fastest."""
    judged = [r for r in rows if r["first"] and r["final"]]
    deferred = [r for r in judged if r["deferred"]]
    slow = []
    for r in judged:
        final = dict(map(tuple, r["final"]))
        best = min(final.values())
        slow.append(final.get(r["first"][0][0], r["first"][0][1]) / best)
    postponed = sum(s > 1.0 for s in slow)
    n = max(len(judged), 1)
    mean = sum(slow) / n - 1.0 if slow else 0.0
    return (f"{len(rows)} problems, {len(judged)} judged, {len(deferred)} with a deferral "
            f"({sum(len(r['deferred']) for r in judged)} solvers); first answer not the final fastest in {postponed} "
            f"({100.0 * postponed / n:.1f}%); first answer's mean slowdown {100.0 * mean:.2f}%, worst "
            f"{max(slow, default=1.0):.2f}x; median find {sorted(r['first_ms'] for r in rows)[len(rows) // 2]:.1f} ms"
            if rows else "no problems")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0.0, help="stop starting chunks after this long (0: no limit)")
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--wait", type=float, default=120.0, help="at most this long for a chunk's background jobs")
    args = ap.parse_args(argv)

    from miofind import tiered
    from miofind.api import find_solutions, warm_up
    from miofind.cli import _read_driver_file

    problems = _read_driver_file(args.file)
    problems = list({p.key(): p for p in problems}.values())[:args.limit or None]
    warm_up()
    t0 = time.perf_counter()
    rows = []
    with open(args.out, "w") as fh:
        for i in range(0, len(problems), args.chunk):
            if args.seconds and time.perf_counter() - t0 > args.seconds:
                break
            chunk = []
            for p in problems[i:i + args.chunk]:
                t = time.perf_counter()
                try:
                    r = find_solutions(p)
                except Exception as e:      # noqa: BLE001  a result, not a stop
                    chunk.append((p, {"key": p.key(), "error": f"{type(e).__name__}: {e}", "first": [], "final": [],
                                      "deferred": [], "first_ms": (time.perf_counter() - t) * 1e3}))
                    continue
                timing = r.timing or {}
                chunk.append((p, {"key": p.key(), "source": r.source,
                                  "first": [[s.solver_id, s.time_ms] for s in r],
                                  "deferred": sorted(f.solver_id for f in r.failures if f.stage == "deferred"),
                                  "predicted_deferred": timing.get("predicted_deferred"),
                                  "surplus_deferred": timing.get("surplus_deferred"),
                                  "first_ms": (time.perf_counter() - t) * 1e3}))
            try:
                tiered.wait(args.wait)
            except Exception as e:          # noqa: BLE001  a job over the wait, or one that raised
                print(f"chunk {i // args.chunk}: wait: {type(e).__name__}: {e}", flush=True)
            for p, row in chunk:
                if row["first"]:
                    try:
                        r = find_solutions(p)
                        row["final"] = [[s.solver_id, s.time_ms] for s in r]
                        row["final_source"] = r.source
                    except Exception as e:  # noqa: BLE001
                        row["final"], row["final_error"] = [], f"{type(e).__name__}: {e}"
                rows.append(row)
                fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"chunk {i // args.chunk}: {len(rows)} problems, {time.perf_counter() - t0:.0f} s", flush=True)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
