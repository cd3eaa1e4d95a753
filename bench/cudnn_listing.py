"""What listing a problem's cuDNN plans costs, and what it leaves to the rest of the process.

For each of bench_cold's 30 rows (five unseen layers, FP32 NCHW and FP16 NHWC, F/B/W), three ways of asking cuDNN's
heuristics (modes A and FALLBACK) for the plans, each timed alone (median of ``--repeats``, after one untimed call per
row and way):

- ``frontend``: the frontend's graph (``PlanGraph`` without ``native``: graph, validate, build_operation_graph,
  create_execution_plans, the note filter, the names);
- ``c``: ``cudnn_execute.heuristic_plans`` through ``miofind._native.cudnn_heuristics`` (one C call, GIL released);
- ``ctypes``: the same calls through ctypes.

Then beside a busy Python thread (what a find's own work is to a thread listing its cuDNN plans): each way's listing
in a thread while the main thread counts in Python, the listing's wall time and the main thread's count rate against
its rate alone. (The rate alone is counted by another loop, a timed one, so the ratios compare the three ways with
each other; session-nov27f's call 2 has them above 1 beside the C listing.) Prints a table; ``--json`` writes every
figure.

    python bench/cudnn_listing.py [--repeats 5] [--busy-repeats 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _listers():
    from miofind.solvers import cudnn_base, cudnn_execute

    dev = cudnn_base._device_id()
    handle, _ = cudnn_execute._native_handle(dev)

    def frontend(p):
        return [pl.name for pl in cudnn_base.PlanGraph(p, dev).plans]

    def backend(native):
        def run(p):
            cudnn_execute.native_calls = native
            try:
                pre, post = cudnn_base.paddings(p)
                return list(dict.fromkeys(cudnn_execute.heuristic_plans(p, cudnn_base.tensor_specs(p), pre, post,
                                                                        handle)))
            finally:
                cudnn_execute.native_calls = True
        return run

    return {"frontend": frontend, "c": backend(True), "ctypes": backend(False)}


def _busy_rate(seconds: float) -> float:
    """Python loop iterations per ms over ``seconds``."""
    n, t0 = 0, time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        n += 1
    return n / ((time.perf_counter() - t0) * 1e3)


def _beside_busy(fn, p) -> tuple[float, float]:
    """(the listing's wall ms in a thread, the main thread's Python rate meanwhile, iterations per ms)."""
    done = threading.Event()
    took = []

    def work():
        t0 = time.perf_counter()
        fn(p)
        took.append((time.perf_counter() - t0) * 1e3)
        done.set()

    t = threading.Thread(target=work)
    n, t0 = 0, time.perf_counter()
    t.start()
    while not done.is_set():
        n += 1
    rate = n / max((time.perf_counter() - t0) * 1e3, 1e-6)
    t.join()
    return took[0], rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed listings alone per row and way")
    ap.add_argument("--busy-repeats", type=int, default=2, help="listings beside busy Python per row and way")
    ap.add_argument("--json")
    a = ap.parse_args()

    import bench_cold
    import cupy

    cupy.cuda.Device(0).use()
    listers = _listers()
    rows = [(s, dt, d) for s in bench_cold.SHAPES for dt in bench_cold.DTYPES for d in bench_cold.DIRECTIONS]
    probs = [bench_cold.problem(*r).as_conv() for r in rows]
    for p in probs:                              # untimed: libraries loaded, each way's first call made
        for fn in listers.values():
            fn(p)
    alone_rate = statistics.median(_busy_rate(0.05) for _ in range(5))
    out = []
    for r, p in zip(rows, probs):
        rec = {"row": "/".join(r), "key": p.key()}
        names = {}
        for way, fn in listers.items():
            ts = []
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                names[way] = fn(p)
                ts.append((time.perf_counter() - t0) * 1e3)
            busy = [_beside_busy(fn, p) for _ in range(a.busy_repeats)]
            rec[way] = {"alone_ms": statistics.median(ts), "beside_busy_ms": statistics.median(b[0] for b in busy),
                        "main_rate": statistics.median(b[1] for b in busy) / alone_rate, "plans": len(names[way])}
        rec["same_names"] = names["frontend"] == names["c"] == names["ctypes"]
        out.append(rec)
        print(json.dumps(rec), file=sys.stderr, flush=True)
    print(f"main thread alone: {alone_rate:.0f} iterations/ms")
    print("| row | plans | same | frontend ms | C ms | ctypes ms | beside busy Python: frontend / C / ctypes ms "
          "| main thread's rate meanwhile: frontend / C / ctypes |")
    print("| --- | ---: | --- | ---: | ---: | ---: | --- | --- |")
    for rec in out:
        f, c, t = rec["frontend"], rec["c"], rec["ctypes"]
        print(f"| {rec['row']} | {c['plans']} | {'yes' if rec['same_names'] else '**no**'} | {f['alone_ms']:.2f} | "
              f"{c['alone_ms']:.2f} | {t['alone_ms']:.2f} | {f['beside_busy_ms']:.1f} / {c['beside_busy_ms']:.1f} / "
              f"{t['beside_busy_ms']:.1f} | {f['main_rate']:.2f} / {c['main_rate']:.2f} / {t['main_rate']:.2f} |")
    for way in listers:
        print(f"{way}: median alone {statistics.median(r[way]['alone_ms'] for r in out):.2f} ms, beside busy Python "
              f"{statistics.median(r[way]['beside_busy_ms'] for r in out):.1f} ms, main thread's rate "
              f"{statistics.median(r[way]['main_rate'] for r in out):.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"alone_rate": alone_rate, "rows": out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
