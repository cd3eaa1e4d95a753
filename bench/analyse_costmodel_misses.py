"""Where the learned cost model misses, leave one preset out: near-ties, confused solver pairs, worst picks.

Reads the per-problem rows ``bench/eval_costmodel.py --rows FILE`` writes (each held-out problem's
candidates: solver, measured ms, model ms, today's ms, the model's place, whether today's predictor
answered for the model) and writes ``misses.md`` / ``misses.json``. ResNet-101's split is ResNet-50's
(the same layers, the same training set): its rows are counted once ("resnet50/101") in the tables
below, but the pooled figures of ``costmodel_eval.md`` count both.

No GPU, no training: ``python bench/analyse_costmodel_misses.py ROWS.json --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miofind.predict import parse_problem_key  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

BANDS = (1.01, 1.02, 1.05, 1.10, 1.5)


def short(sid: str) -> str:
    return (sid.replace("ConvImplicitGemm", "IGemm").replace("ConvCudnn", "cuDNN").replace("ConvDirect", "Direct")
            .replace("ConvWinograd3x3", "Wino").replace("ConvDepthwise", "DW").replace("ConvFFT", "FFT"))


def kind(p) -> str:
    return "depthwise" if p.groups > 1 and p.groups == p.c else ("grouped" if p.groups > 1 else "dense")


def perf_times(db_path):
    """(problem key, solver id) -> the PerfDB's tuned time where its config is the find record's."""
    from miofind.db import FindDB
    db = FindDB(db_path, readonly=True, immutable=True)
    configs = {(r.problem_key, r.solver_id): r.config for r in db.iter_records(None)}
    return {(p.problem_key, p.solver_id): p.time_ms for p in db.iter_perf(None)
            if configs.get((p.problem_key, p.solver_id)) == p.config}


def analyse(dump, perf=None):
    perf = perf or {}
    probs = []
    for d in dump:
        if d["held"] == "resnet101":   # the same split as resnet50
            continue
        p = parse_problem_key(d["key"])
        rows = d["rows"]
        best = min(rows, key=lambda r: r[1])
        pick = min(rows, key=lambda r: r[4])
        today = min(rows, key=lambda r: r[3])
        order = sorted(rows, key=lambda r: r[4])
        probs.append({
            "held": "resnet50/101" if d["held"] == "resnet50" else d["held"], "key": d["key"],
            "group": f"{p.dtype}-{p.direction}", "layout": "NHWC" if p.layouts[0].startswith("NHWC") else "NCHW",
            "n": p.n, "kind": kind(p), "fallback": d["fallback"], "candidates": len(rows),
            "best": best[0], "pick": pick[0], "slow": pick[1] / best[1], "today_slow": today[1] / best[1],
            "second_slow": min(r[1] for r in order[:2]) / best[1],
            "cudnn_slow": min((r[1] for r in rows if get_solver(r[0]).family == "cudnn"), default=float("nan")) / best[1],
            "pred_ratio_pick_best": pick[2] / best[2] if pick is not best else 1.0,
            # the pick's time as the PerfDB (its tuner) measured the same config, over the fastest find time
            "pick_perf_slow": perf[(d["key"], pick[0])] / best[1] if (d["key"], pick[0]) in perf else None,
        })
    return probs


def band_counts(ps):
    misses = [q for q in ps if q["slow"] > 1 + 1e-12]
    out = {"problems": len(ps), "misses": len(misses)}
    for b in BANDS:
        out[f"within_{b}"] = sum(q["slow"] <= b for q in misses)
    out["over_1.5"] = sum(q["slow"] > 1.5 for q in misses)
    out["excess_sum"] = sum(q["slow"] - 1 for q in ps)   # the sum behind the mean slowdown
    out["excess_of_misses_over_1.1"] = sum(q["slow"] - 1 for q in misses if q["slow"] > 1.1)
    out["top2_contains_best"] = sum(q["second_slow"] <= 1 + 1e-12 for q in ps)
    return out


def table(lines, title, rows, head):
    lines += ["", f"### {title}", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def render(probs):
    lines = ["# Misses of the learned cost model, leave one preset out", "",
             "From `eval_costmodel.py --rows`. A miss: the model's pick (its first place) is not the measured "
             "fastest. Slowdown: the pick's measured time over the fastest's. ResNet-101's split is "
             "ResNet-50's (same layers held out, same training set), counted once here as `resnet50/101`; "
             f"{len(probs)} distinct held-out problems. `fallback`: the model did not cover the problem's kind or "
             "one of its solvers, and today's predictor picked (as immediate mode does)."]
    bands = [f"<= {b}x" for b in BANDS]
    head = ["held out", "group", "problems", "misses", *bands, "> 1.5x", "sum of excess", "top-2 holds best"]

    def brow(name, g, ps):
        c = band_counts(ps)
        return [name, g, c["problems"], c["misses"], *(c[f"within_{b}"] for b in BANDS), c["over_1.5"],
                f"{c['excess_sum']:.2f}", c["top2_contains_best"]]

    rows = []
    by_held = defaultdict(list)
    for q in probs:
        by_held[q["held"]].append(q)
    for held, ps in by_held.items():
        by_group = defaultdict(list)
        for q in ps:
            by_group[q["group"]].append(q)
        rows += [brow(held, g, v) for g, v in sorted(by_group.items())]
        rows.append(brow(f"**{held}**", "all", ps))
    rows.append(brow("**all**", "all", probs))
    table(lines, "Misses by closeness (counts of misses whose pick is within the band of the fastest)", rows, head)

    for name, sel in (("model answered", [q for q in probs if not q["fallback"]]),
                      ("fallback (today's predictor)", [q for q in probs if q["fallback"]])):
        c = band_counts(sel)
        lines.append(f"\n{name}: {c['problems']} problems, {c['misses']} misses, "
                     f"{c['within_1.02']} within 2%, {c['within_1.05']} within 5%, {c['over_1.5']} over 1.5x, "
                     f"sum of excess {c['excess_sum']:.2f}")
    kinds = Counter((q["kind"], q["fallback"]) for q in probs)
    lines.append("\nProblems by kind (kind, fallback): " + ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())))

    pairs = Counter()
    excess = Counter()
    for q in probs:
        if q["slow"] > 1 + 1e-12:
            pairs[(q["group"][-1], short(q["pick"]), short(q["best"]))] += 1
            excess[(q["group"][-1], short(q["pick"]), short(q["best"]))] += q["slow"] - 1
    rows = [[d, p, b, n, f"{excess[(d, p, b)]:.2f}"] for (d, p, b), n in pairs.most_common(25)]
    table(lines, "Confused pairs (direction, picked, fastest): the 25 most frequent", rows,
          ["dir", "picked", "fastest", "misses", "sum of excess"])
    rows = [[d, p, b, pairs[(d, p, b)], f"{e:.2f}"] for (d, p, b), e in excess.most_common(15)]
    table(lines, "Confused pairs by the slowdown they cost (sum of pick/best - 1)", rows,
          ["dir", "picked", "fastest", "misses", "sum of excess"])

    worst = sorted(probs, key=lambda q: -q["slow"])[:30]
    rows = [[q["held"], q["key"], q["kind"], "yes" if q["fallback"] else "", short(q["pick"]), short(q["best"]),
             f"{q['slow']:.2f}x", f"{q['today_slow']:.2f}x", f"{q['cudnn_slow']:.2f}x",
             "" if q.get("pick_perf_slow") is None else f"{q['pick_perf_slow']:.2f}x"] for q in worst]
    table(lines, "The 30 worst picks (PerfDB: the pick's time as the PerfDB measured the same config while tuning, "
          "over the fastest find record; empty where the PerfDB has no entry of that config)", rows,
          ["held out", "problem", "kind", "fallback", "picked", "fastest", "slowdown", "today's", "cuDNN's", "PerfDB"])
    big = [q for q in probs if q["slow"] > 1.5]
    contra = [q for q in big if q.get("pick_perf_slow") is not None and q["pick_perf_slow"] <= 1.1]
    lines.append(f"\nOf the {len(big)} picks over 1.5x, {len(contra)} are picks whose find record the PerfDB contradicts: "
                 "the same config measured within 1.1x of the fastest while tuning ("
                 + ", ".join(f"{q['key']} {short(q['pick'])} {q['slow']:.2f}x -> {q['pick_perf_slow']:.2f}x"
                             for q in contra) + ").")

    # what simple rules would give on the same problems (for reference, not a model)
    def summary(slows):
        n = len(slows)
        return (f"top-1 {100 * sum(s <= 1 + 1e-12 for s in slows) / n:.1f}%, mean slowdown "
                f"{100 * (sum(slows) / n - 1):.2f}%, worst {max(slows):.2f}x")
    lines += ["", "### Reference rules on the same problems (each distinct problem once)", "",
              f"- the model (as evaluated): {summary([q['slow'] for q in probs])}",
              f"- today's predictor: {summary([q['today_slow'] for q in probs])}",
              f"- always cuDNN: {summary([q['cudnn_slow'] for q in probs if q['cudnn_slow'] == q['cudnn_slow']])}",
              f"- the better of the model's first two (an oracle, for scale): {summary([q['second_slow'] for q in probs])}"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", help="JSON written by eval_costmodel.py --rows")
    ap.add_argument("--out", default=None, help="folder for misses.md and misses.json")
    ap.add_argument("--db", default=str(Path(__file__).resolve().parents[1] / "finddb" / "sm_90-132.sqlite"),
                    help="FindDB whose PerfDB annotates the worst picks")
    args = ap.parse_args(argv)
    probs = analyse(json.loads(Path(args.rows).read_text()), perf_times(args.db))
    md = render(probs)
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "misses.md").write_text(md)
        (out / "misses.json").write_text(json.dumps(probs) + "\n")


if __name__ == "__main__":
    main()
