"""How often a second measurement agrees with the FindDB on a problem's fastest solver (issue 20's noise ceiling).

For each problem both DBs hold (``--again``: a FindDB the same problems were found into again, e.g. by
``miofind tune --file`` of ``bench/sweep_problems.py resample``), over the solvers both measured: whether the
fastest is the same solver, and the slowdown, under each measurement, of the other's pick. A predictor that knew
the expected time of every solver exactly would still be judged against one measurement: its top-1 against the
shipped DB can be no better than about this agreement. Per dtype and direction and pooled; no GPU.

``--rows`` (the ``--rows`` file of ``bench/eval_costmodel.py``: each held-out problem's solvers with the model's
place) also scores the learned model's leave-one-preset-out pick on the same problems, next to the DB record's
pick and the second measurement's, each against the DB's times, the second measurement's, and their geometric
mean (the least noisy truth at hand): top-1, mean and worst slowdown, and the share of picks within 3% of the
best (a find stops timing a candidate once 5 runs agree within 3%).

    python bench/noise_ceiling.py --again resample.sqlite [--db finddb/sm_90-132.sqlite] [--rows rows.json] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def times(path) -> dict[str, dict[str, float]]:
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for key, sid, t in c.execute("select problem_key, solver_id, time_ms from find_records where time_ms > 0"):
        out[key][sid] = t
    return out


def compare(first, again) -> dict:
    rows = []
    for key in sorted(set(first) & set(again)):
        common = sorted(set(first[key]) & set(again[key]))
        if len(common) < 2:
            continue
        a = {s: first[key][s] for s in common}
        b = {s: again[key][s] for s in common}
        pa, pb = min(a, key=a.get), min(b, key=b.get)
        rows.append({"key": key, "solvers": len(common), "same": pa == pb,
                     "slowdown_again": b[pa] / b[pb], "slowdown_first": a[pb] / a[pa],
                     "first_best": pa, "again_best": pb,
                     "gap_first": sorted(a.values())[1] / a[pa]})
    return rows


def summary(rows) -> dict:
    if not rows:
        return {}
    return {"problems": len(rows), "agreement": sum(r["same"] for r in rows) / len(rows),
            "mean_slowdown_of_first_pick_under_again": statistics.fmean(r["slowdown_again"] for r in rows) - 1,
            "worst_slowdown_of_first_pick_under_again": max(r["slowdown_again"] for r in rows),
            "mean_slowdown_of_again_pick_under_first": statistics.fmean(r["slowdown_first"] for r in rows) - 1,
            "worst_slowdown_of_again_pick_under_first": max(r["slowdown_first"] for r in rows)}


def score_picks(first, again, model_places) -> dict:
    """The three pickers of ``--rows`` against the three truths (see the module docstring)."""
    picks = {"model (leave one preset out)": {}, "DB record": {}, "second measurement": {}}
    commons = {}   # per problem, the solvers all three measured or ranked
    for key in sorted(set(first) & set(again) & set(model_places)):
        common = sorted(set(first[key]) & set(again[key]) & set(model_places[key]))
        if len(common) < 2:
            continue
        commons[key] = common
        picks["model (leave one preset out)"][key] = min(common, key=model_places[key].get)
        picks["DB record"][key] = min(common, key=lambda s: first[key][s])
        picks["second measurement"][key] = min(common, key=lambda s: again[key][s])
    out = {}
    for name, chosen in picks.items():
        out[name] = {}
        for truth in ("db", "again", "geomean"):
            slow = []
            for key, pick in chosen.items():
                t = {s: (first[key][s] if truth == "db" else again[key][s] if truth == "again"
                         else math.sqrt(first[key][s] * again[key][s])) for s in commons[key]}
                slow.append(t[pick] / min(t.values()))
            out[name][truth] = {"problems": len(slow), "top1": sum(x <= 1 + 1e-12 for x in slow) / len(slow),
                                "within_3pct": sum(x <= 1.03 for x in slow) / len(slow),
                                "mean_slowdown": statistics.fmean(slow) - 1, "worst_slowdown": max(slow)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--again", required=True)
    ap.add_argument("--rows", default=None, help="bench/eval_costmodel.py --rows file: also score the model's picks")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows = compare(times(args.db), times(args.again))
    groups = defaultdict(list)
    for r in rows:
        parts = r["key"].split("-")
        groups[f"{parts[-2]}-{parts[-1]}"].append(r)
    rep = {"db": args.db, "again": args.again, "pooled": summary(rows),
           "groups": {g: summary(v) for g, v in sorted(groups.items())},
           "disagreements": [r for r in rows if not r["same"]]}
    print(f"{'group':10s} {'problems':>8s} {'agree':>7s} {'first pick, again: mean / worst':>32s}")
    for g, s in [*rep["groups"].items(), ("pooled", rep["pooled"])]:
        print(f"{g:10s} {s['problems']:8d} {100 * s['agreement']:6.1f}% "
              f"{100 * s['mean_slowdown_of_first_pick_under_again']:10.2f}% / {s['worst_slowdown_of_first_pick_under_again']:.2f}x")
    print("disagreements (first best -> again best, the first's gap to its runner-up, the slowdown under again):")
    for r in rep["disagreements"]:
        print(f"  {r['key']}: {r['first_best']} -> {r['again_best']}, gap {r['gap_first']:.3f}, {r['slowdown_again']:.3f}x")
    if args.rows:
        places = {}
        for e in json.loads(Path(args.rows).read_text()):
            places.setdefault(e["key"], {r[0]: r[4] for r in e["rows"]})
        rep["pickers"] = score_picks(times(args.db), times(args.again), places)
        print("pickers on the problems both measured (top-1 / within 3% / mean slowdown / worst), against the DB's "
              "times, the second measurement's, and their geometric mean:")
        for name, v in rep["pickers"].items():
            print(f"  {name:30s} " + "  ".join(
                f"{t}: {100 * m['top1']:.1f}% / {100 * m['within_3pct']:.1f}% / {100 * m['mean_slowdown']:.2f}% / "
                f"{m['worst_slowdown']:.2f}x" for t, m in v.items()) + f"  ({v['db']['problems']} problems)")
    if args.out:
        Path(args.out).write_text(json.dumps(rep, indent=1) + "\n")


if __name__ == "__main__":
    main()
