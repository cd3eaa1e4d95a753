"""Session nov29b, call 1: device timing in sets (e34c9e85) against the run-by-run timing it replaced, on the same
invokers and buffers in one process, the two interleaved (ABBA by round): per candidate (bench_cold's 30 unseen
problems, every applicable solver but the naive ones, up to two find configs each), the median each gives and the host
time each takes, with a find's arguments (3 warm-ups, 10 runs, a 250 ms budget, early stop armed but never reached,
settling at 3%, the verification run as the first warm-up).

    python agree.py --before /tmp/harness_before.py --out agree.json [--rounds 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]


def load_before(path: str):
    spec = importlib.util.spec_from_file_location("miofind._harness_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="miofind/harness.py before e34c9e85")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--deadline", type=float, default=200.0)
    a = ap.parse_args()

    import cupy

    from bench_cold import DTYPES, SHAPES, problem
    from miofind import harness as after
    from miofind.find import candidates
    from miofind.harness import SETTLE_SPREAD, Harness
    from miofind.invokers import build_invoker, call

    from miofind.device import current_device
    from miofind.tuning.precompile import precompile

    before = load_before(a.before)
    sides = {"before": before, "after": after}
    cases = []      # (problem, solver, [(config, solution)])
    for shape in SHAPES:
        for dt in DTYPES:
            for d in "FBW":
                p = problem(shape, dt, d)
                for s in candidates(p)[0]:
                    try:
                        sols = [(c, s.get_solution(p, c)) for c in list(s.find_configs(p))[:2]]
                    except Exception as e:     # noqa: BLE001
                        print(f"{p.key()} {s.id}: configs: {type(e).__name__}: {str(e)[:150]}", flush=True)
                        continue
                    cases.append((p, s, sols))
    t0 = time.time()
    n, errs = precompile([k for _, _, sols in cases for _, sol in sols for k in sol.kernels], current_device().arch)
    print(f"precompiled {n} kernels in {time.time() - t0:.1f} s; errors: {len(errs) if errs else 'none'}", flush=True)
    t_start = time.time()
    rows, h = [], None
    for p, s, sols in cases:
        if time.time() - t_start > a.deadline:
            print(f"deadline: stopped at {p.key()}", flush=True)
            break
        if h is None or h.problem != p:
            h = Harness(p, verify=True, seed=0)
        for c, sol in sols:
            try:
                inv = build_invoker(p, sol)
                ws = h.workspace(sol.workspace_bytes)
                h.check(inv, ws, s.family)
            except Exception as e:     # noqa: BLE001
                print(f"{p.key()} {s.id} {c}: {type(e).__name__}: {str(e)[:150]}", flush=True)
                continue
            fn = lambda: call(inv, p, h.a, h.b, h.out, ws, bias=h.bias)  # noqa: E731
            got = {"before": [], "after": []}
            for r in range(a.rounds):
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in order:
                    cupy.cuda.get_current_stream().synchronize()
                    t0 = time.perf_counter()
                    t = sides[side].timed_runs(fn, 3, 10, budget_ms=250.0, cut_ms=1e9, first_ms=h.check_ms,
                                               settle=SETTLE_SPREAD)
                    host = (time.perf_counter() - t0) * 1e3
                    got[side].append({"median_ms": t.median_ms, "q20_ms": t.q20_ms, "q80_ms": t.q80_ms,
                                      "runs": t.runs, "host_ms": host})
            rows.append({"key": p.key(), "solver": s.id, "config": sol.config, "runs": got})
            med = {k: statistics.median(x["median_ms"] for x in v) for k, v in got.items()}
            hst = {k: statistics.median(x["host_ms"] for x in v) for k, v in got.items()}
            print(f"{p.key()} {s.id} {sol.config}: median {med['before'] * 1e3:.1f} / {med['after'] * 1e3:.1f} us "
                  f"({med['after'] / med['before']:.3f}), host {hst['before']:.2f} / {hst['after']:.2f} ms", flush=True)
    with open(a.out, "w") as fh:
        json.dump({"rows": rows}, fh, indent=1)
    summarise(rows)


def summarise(rows) -> None:
    """Per candidate: after / before median (the median over rounds); per problem: whether the fastest candidate is
    the same (and, where not, how far apart the two picks are by the before figures); host ms per candidate."""
    med = lambda v: statistics.median(x["median_ms"] for x in v)  # noqa: E731
    ratios = [med(r["runs"]["after"]) / med(r["runs"]["before"]) for r in rows]
    logs = [math.log(x) for x in ratios]
    print(f"\ncandidates: {len(rows)}; after / before median: geomean {math.exp(sum(logs) / len(logs)):.4f}, "
          f"within 3%: {sum(abs(x - 1) <= 0.03 for x in ratios)}, within 5%: {sum(abs(x - 1) <= 0.05 for x in ratios)}, "
          f"min {min(ratios):.3f}, max {max(ratios):.3f}")
    host = {s: [statistics.median(x["host_ms"] for x in r["runs"][s]) for r in rows] for s in ("before", "after")}
    print(f"host ms a candidate's timing, mean: before {statistics.mean(host['before']):.3f}, after "
          f"{statistics.mean(host['after']):.3f}; median {statistics.median(host['before']):.3f} / "
          f"{statistics.median(host['after']):.3f}")
    by_key: dict[str, list] = {}
    for r in rows:
        by_key.setdefault(r["key"], []).append(r)
    same, worst = 0, 1.0
    for k, rs in by_key.items():
        pb = min(rs, key=lambda r: med(r["runs"]["before"]))
        pa = min(rs, key=lambda r: med(r["runs"]["after"]))
        if pb is pa:
            same += 1
        else:
            worst = max(worst, med(pa["runs"]["before"]) / med(pb["runs"]["before"]))
    print(f"problems: {len(by_key)}; the same fastest candidate: {same}; where not, the after pick's before time over "
          f"the before pick's, worst {worst:.3f}")


if __name__ == "__main__":
    main()
