"""Diagnosis (issue 18, session-warmfind call 3; call 2 crashed in the cuDNN part): where a warm process's find of an unseen layer spends its
wall time, function by function (inclusive wall time per call, all threads, no profiler), and what cuDNN's
plans cost: graph + heuristics, each plan's build, its behaviour notes, its first and second execution.

    MIOFIND_DB=sqlite:////tmp/x.sqlite python diag.py OUT.json [fp32,fp16]
"""
import collections
import functools
import json
import os
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_cold as bc  # noqa: E402

STATS = collections.defaultdict(lambda: [0, 0.0])
_tl = threading.local()


def wrap(obj, name, label):
    fn = getattr(obj, name)

    @functools.wraps(fn)
    def timed(*a, **k):
        depth = getattr(_tl, "depth", {})
        _tl.depth = depth
        if depth.get(label):     # recursion: count the outer call only
            return fn(*a, **k)
        depth[label] = 1
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            depth[label] = 0
            s = STATS[label]
            s[0] += 1
            s[1] += (time.perf_counter() - t0) * 1e3
    setattr(obj, name, timed)


def main():
    out_path = sys.argv[1]
    dtypes = (sys.argv[2] if len(sys.argv) > 2 else "fp32").split(",")
    import cupy
    cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(0).use()
    from miofind import compile as C, find as F, generic as G, harness as H, tiered as T, verify as V
    from miofind.api import find_solutions, warm_up
    from miofind.solvers import cudnn_base as CB, fft_base as FB
    import miofind.reference as R

    warm_up()
    for d in "FBW":
        for dt in dtypes:
            find_solutions(bc.problem("warmup", dt, d), mode="normal")
    for obj, name in [(F, "candidates"), (F, "db_answer"), (F, "_fast_reads"), (F, "recorded_times"),
                      (F, "expected_order"), (F, "predicted_losers"), (F, "to_isolate"), (F, "prepare_all"),
                      (F, "defer_candidates"), (F, "find_configs"), (F, "_prepare"), (F, "store_solutions"),
                      (F, "record_failures"), (F, "store_dbs"), (T, "after_find"), (T, "deferrable"),
                      (T, "prepare"), (T, "generic_compiled"), (T, "_generic_solution"), (G, "_instance"),
                      (G, "_write_global"), (G, "build_generic_invoker"), (C, "cached_cubin"), (C, "binary_key"),
                      (C, "is_compiled"), (C, "cubin_for"), (C, "compile_kernel"), (CB, "plan_graph"),
                      (CB.PlanGraph, "build"), (CB.PlanGraph, "_build_graph"), (CB, "resolve"), (CB, "list_plans"),
                      (CB.PlanGraph, "make_invoker"), (FB, "_ranked_configs"), (H.Harness, "__init__"),
                      (H.Harness, "run_poisoned"), (H.Harness, "verify_output"), (H, "timed_runs"),
                      (H.Harness, "ready"), (V, "errors_of"), (V, "poison"), (R, "conv_reference")]:
        wrap(obj, name, f"{getattr(obj, '__name__', obj)}.{name}")
    rows = []
    for shape in bc.SHAPES:
        for dt in dtypes:
            for d in "FBW":
                p = bc.problem(shape, dt, d)
                STATS.clear()
                t0 = time.perf_counter()
                res = find_solutions(p, mode="normal")
                wall = (time.perf_counter() - t0) * 1e3
                rows.append({"shape": shape, "dtype": dt, "dir": d, "wall_ms": wall, "timing": res.timing,
                             "stats": {k: [v[0], round(v[1], 2)] for k, v in sorted(STATS.items(), key=lambda kv: -kv[1][1])}})
                print(f"{shape} {dt} {d}: {wall:.1f} ms", flush=True)
    json.dump({"finds": rows}, open(out_path, "w"), indent=1)
    # cuDNN's plans, on the same shapes at batch 20 (new to this process): the frontend's steps timed, with
    # heuristic modes A + FALLBACK (as found) and A alone
    import cudnn as _cd
    pg = _cd.pygraph
    for m in ("validate", "build_operation_graph", "create_execution_plans", "deselect_numeric_notes",
              "get_execution_plan_count", "get_plan_name_at_index", "build_plan_at_index",
              "get_workspace_size_plan_at_index"):
        if hasattr(pg, m):
            wrap(pg, m, "fe." + m)
    cud = []
    stream = cupy.cuda.get_current_stream()
    for shape in bc.SHAPES:
        for dt in dtypes:
            for d in "FBW":
                kw = dict(bc.SHAPES[shape]); kw["n"] = 20
                ddt, lay = bc.DTYPES[dt]
                from miofind.problem import ProblemDescription
                p = ProblemDescription.make(d, dtype=ddt, layout=lay, **kw)
                modes = {}
                for hm in (("A",), ("A", "FALLBACK")):
                    CB.HEURISTIC_MODES = hm
                    STATS.clear()
                    t0 = time.perf_counter()
                    g = CB.PlanGraph(p, 0)
                    t_graph = (time.perf_counter() - t0) * 1e3
                    modes["+".join(hm)] = {"graph_ms": t_graph, "plans": [pl.name for pl in g.plans][:8],
                                           "nplans": len(g.plans),
                                           "stats": {k: [v[0], round(v[1], 2)] for k, v in STATS.items()}}
                STATS.clear()
                cdt = cupy.float32 if ddt == "FP32" else cupy.float16
                a, b, o = (cupy.random.standard_normal(int(__import__("math").prod(s))).astype(cdt) for s in p.io_shapes())
                plans = []
                for pl in g.plans[:5]:
                    t0 = time.perf_counter()
                    g.build(pl)
                    t_build = (time.perf_counter() - t0) * 1e3
                    try:
                        notes = [str(n) for n in g.graph.get_behavior_notes_for_plan_at_index(pl.index)]
                    except Exception as e:
                        notes = [f"?{type(e).__name__}: {e}"[:120]]
                    row = {"name": pl.name, "usable": pl.usable, "reason": pl.reason[:100], "build_ms": t_build,
                           "notes": notes}
                    if pl.usable:
                        ws = cupy.empty(max(1, pl.workspace), dtype=cupy.uint8).data.ptr
                        inv = g.invoker(pl)
                        ex = []
                        for _ in range(3):
                            stream.synchronize()
                            t0 = time.perf_counter()
                            inv(a, b, o, ws, stream.ptr)
                            stream.synchronize()
                            ex.append((time.perf_counter() - t0) * 1e3)
                        row["exec_ms"] = ex
                    plans.append(row)
                cud.append({"shape": shape, "dtype": dt, "dir": d, "graph_ms": t_graph, "plans": plans, "modes": modes,
                            "build_stats": {k: [v[0], round(v[1], 2)] for k, v in STATS.items()}})
                print(f"cudnn {shape} {dt} {d}: graph A {modes['A']['graph_ms']:.1f} ms ({modes['A']['nplans']} plans: "
                      f"{modes['A']['plans'][:3]}), A+FALLBACK {t_graph:.1f} ms ({modes['A+FALLBACK']['nplans']}: "
                      f"{modes['A+FALLBACK']['plans'][:3]}); " + "; ".join(
                    f"{r['name']} b{r['build_ms']:.1f} x{'/'.join('%.1f' % x for x in r.get('exec_ms', []))} {r['notes']}"
                    for r in plans), flush=True)
        json.dump({"finds": rows, "cudnn": cud}, open(out_path, "w"), indent=1)
    import multiprocessing
    for proc in multiprocessing.active_children():
        proc.kill()
    os._exit(0)


if __name__ == "__main__":
    main()
