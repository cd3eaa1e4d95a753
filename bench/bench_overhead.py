"""Host time of the run path, on the GPU: what a framework pays per convolution call.

1. A tiny problem (FP32 NCHW, N=1, 8->8 channels, 8x8, 3x3 pad 1), 20,000 calls each, host
   microseconds per call (median over bursts of 100 calls of the time to queue them, the GPU
   drained between bursts so that GPU time never shows as host time), side by side in the
   same run with ``torch.nn.functional.conv2d`` and one bare CuPy ``RawKernel`` launch:
   prepared solutions (``Solution.prepare()``) of single- and multi-launch solvers with torch and
   CuPy arrays, ``run_solution`` allocating its output, and where the time goes per call
   (argument checks and pointers, stream query, the launches); each launch path of ``--paths``
   (the native extension replaying a whole solution, the extension call by call, ctypes and CuPy) in
   alternating rounds in one process.
2. ResNet-50 at N=32, every layer F/B/W, FP32 NCHW, FP16 NCHW and FP16 NHWC (channels_last
   tensors): the solution find picks (from the FindDBs) and the best own solution through the
   prepared path, against cuDNN's best plan through the same prepared path on the same buffers
   (the primary baseline) and cuDNN through PyTorch (cudnn.benchmark, TF32 off; secondary), each
   timed over 50 back-to-back calls with CUDA events as a framework would call them.
3. A cold process (after CUDA is initialised): ``import miofind``, the first ``find_solutions``
   answered from the DBs, the first run with the binary in the kernel cache, and the
   ``miofind find`` CLI on a DB hit, each in a fresh interpreter.

    python bench/bench_overhead.py --out bench/results/hot-path [--calls 20000] [--skip-resnet] [--configs FP32:NCHW,...]
        [--paths native,stepwise,python] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from launch_paths import set_path  # noqa: E402

TINY = dict(n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1)
SINGLE = ("ConvImplicitGemmFwd", "ConvDirectTiledFwd", "ConvDirectNaiveConvFwd")
MULTI = ("GemmFwdRest", "ConvWinograd3x3F23Fwd", "ConvFFTFwd", "ConvCudnnFwd")
# launches and library calls per call of each solution on TINY (kernels + cuBLAS/cuFFT/cuDNN calls)
CALLS = {"ConvImplicitGemmFwd": 1, "ConvDirectTiledFwd": 1, "ConvDirectNaiveConvFwd": 1,
         "GemmFwdRest": 2, "ConvWinograd3x3F23Fwd": 4, "ConvFFTFwd": 6, "ConvCudnnFwd": 1}


def host_us(fns, calls: int, sync, burst: int = 100, warmup: int | None = None):
    """Host microseconds per call: the median over bursts of ``burst`` calls of the time to queue them
    (``calls // burst`` bursts, at least 5), after ``warmup`` untimed calls (default ``min(200, calls)``).
    ``fns`` is one callable (returns its figure) or a dict of them (returns a dict): their bursts are
    interleaved, each burst index timing every callable in turn (the order reversed every other
    index), so that a host whose speed drifts during the run favours none of them. The queue is
    drained (``sync``) between bursts, outside the timing, so that a kernel slower than its launch
    never fills CUDA's launch queue and turns the figure into GPU time (100 calls of a 6-launch
    solution stay well under the queue's depth)."""
    one = callable(fns)
    if one:
        fns = {"": fns}
    for fn in fns.values():
        for _ in range(min(200, calls) if warmup is None else warmup):
            fn()
    sync()
    names = list(fns)
    out = {k: [] for k in names}
    for b in range(max(5, calls // burst)):
        for k in (names if b % 2 == 0 else names[::-1]):
            fn = fns[k]
            t0 = time.perf_counter()
            for _ in range(burst):
                fn()
            out[k].append((time.perf_counter() - t0) / burst * 1e6)
            sync()
    med = {k: statistics.median(v) for k, v in out.items()}
    return med[""] if one else med


def _bound(paths, sols: dict, kernel, n, x, w, y, cx, cw, cy) -> dict:
    """Per launch path: a packed ``Launch`` of ``kernel`` and, per solution, its own copy of the Solution,
    its Prepared and a workspace, each called once so that its launches are bound on that path (a
    bound launch keeps its path after ``set_path`` switches)."""
    import copy

    import torch

    import miofind
    from miofind.launch import PTR, Launch

    s0 = torch.cuda.current_stream().cuda_stream
    objs = {}
    for path in paths:
        set_path(path)
        lk = Launch(kernel, (1, 1, 1), (32, 1, 1), (PTR, PTR, PTR, n))
        lk(s0, x.data_ptr(), w.data_ptr(), y.data_ptr())
        per = {}
        for sid, sol in sols.items():
            s2 = copy.copy(sol)
            s2._prepared = None
            pr = s2.prepare()
            ws = torch.empty(max(1, pr.workspace_bytes), dtype=torch.uint8, device="cuda")
            pr(x, w, y)
            pr(x, w, y, workspace=ws, stream=s0)
            pr(cx, cw, cy)
            miofind.run_solution(s2, x, w, y)
            assert s2._prepared is pr
            per[sid] = (s2, pr, ws)
        objs[path] = (lk, per)
    torch.cuda.synchronize()
    return objs


def _invoke(pr, px: int, pw: int, py: int, stream: int):
    """A call of ``pr``'s bare invoker on raw pointers and its own workspace (the launches alone)."""
    pws = pr.workspace_for(stream)
    inv = pr.invoker
    return lambda: inv(px, pw, py, pws, stream)


def tiny_round(calls: int, paths, objs: dict, sols: dict, k, n, x, w, y, cx, cw, cy) -> dict:
    """One round of the tiny problem's rows, each launch path's figures interleaved burst by burst."""
    import torch

    import miofind
    from miofind.invokers import current_stream

    p = next(iter(sols.values())).problem
    sync = torch.cuda.synchronize
    nosync = lambda: None  # noqa: E731
    s0 = torch.cuda.current_stream().cuda_stream
    px, pw, py = x.data_ptr(), w.data_ptr(), y.data_ptr()
    out = {path: {"anchors_us": {}, "solutions": {}} for path in paths}
    shared = {"torch.nn.functional.conv2d": host_us(lambda: torch.nn.functional.conv2d(x, w, padding=1), calls, sync),
              "CuPy RawKernel launch (4 args)": host_us(lambda: k((1,), (32,), (cx, cw, cy, n)), calls, sync)}
    launch = host_us({pa: (lambda lk=objs[pa][0]: lk(s0, px, pw, py)) for pa in paths}, calls, sync)
    find = host_us(lambda: miofind.find_solutions(p), calls, nosync)
    get = host_us(lambda: miofind.get_solutions(p), calls, nosync)
    for pa in paths:
        out[pa]["anchors_us"] = {**shared, "miofind Launch (4 args, packed)": launch[pa]}
        out[pa]["repeated_find_us"], out[pa]["repeated_get_us"] = find, get
    for sid in sols:
        per = {pa: objs[pa][1][sid] for pa in paths}
        pr0 = per[paths[0]][1]
        rows = {
            "prepared_torch_us": (lambda o: lambda: o[1](x, w, y), sync),
            "prepared_torch_stream_ws_us": (lambda o: lambda: o[1](x, w, y, workspace=o[2], stream=s0), sync),
            "prepared_cupy_us": (lambda o: lambda: o[1](cx, cw, cy), sync),
            "run_solution_alloc_us": (lambda o: lambda: miofind.run_solution(o[0], x, w), sync),
            "run_solution_into_us": (lambda o: lambda: miofind.run_solution(o[0], x, w, y), sync),
            "part_invoker_us": (lambda o: _invoke(o[1], px, pw, py, s0), sync),
        }
        res = {pa: {"launches": CALLS.get(sid)} for pa in paths}
        for name, (make, sy) in rows.items():
            got = host_us({pa: make(per[pa]) for pa in paths}, calls, sy)
            for pa in paths:
                res[pa][name] = got[pa]
        # where the time goes, apart from the launches (the same code on every path)
        checks = host_us(lambda: (pr0._ptr(x, 0), pr0._ptr(w, 1), pr0._ptr(y, 2)), calls, nosync)
        squery = host_us(lambda: current_stream(x), calls, nosync)
        for pa in paths:
            res[pa]["part_checks_pointers_us"], res[pa]["part_stream_query_us"] = checks, squery
            # the output is right (float64 reference on the CPU), on fresh inputs and a poisoned output
            x.normal_()
            w.normal_()
            y.fill_(float("nan"))
            per[pa][1](x, w, y)
            sync()
            ref = torch.nn.functional.conv2d(x.double().cpu(), w.double().cpu(), padding=1)
            res[pa]["rel_err"] = float((y.double().cpu() - ref).norm() / ref.norm())
            out[pa]["solutions"][sid] = res[pa]
    return out


def _median_rows(rounds: list[dict]) -> dict:
    """The per-key median over rounds of nested dicts of numbers (other values from the first round)."""
    first = rounds[0]
    if isinstance(first, dict):
        return {k: _median_rows([r[k] for r in rounds]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return statistics.median(rounds)
    return first


def tiny(calls: int, paths=("native",), rounds: int = 1) -> dict:
    """The tiny problem on each launch path in ``paths`` (their figures interleaved burst by burst),
    ``rounds`` times; per path, each figure's median over the rounds (``rounds`` keeps them all)."""
    import cupy
    import torch

    import miofind
    from miofind.problem import ProblemDescription

    torch.backends.cudnn.benchmark = True
    p = ProblemDescription.make("F", **TINY)
    x = torch.randn(p.x_shape, device="cuda")
    w = torch.randn(p.w_shape, device="cuda")
    y = torch.empty(p.y_shape, device="cuda")
    cx, cw, cy = cupy.asarray(x), cupy.asarray(w), cupy.asarray(y)
    # every solution timed fully: one clearly losing on this tiny problem is still a row here (not cut)
    from miofind.find import candidates
    ids = [s.id for s in candidates(p, with_naive=True)[0] if s.id in SINGLE + MULTI]
    cut = os.environ.get("MIOFIND_CUT_FACTOR")
    os.environ["MIOFIND_CUT_FACTOR"] = "0"
    try:
        res = miofind.find_solutions(p, mode="benchmark", store=False, solvers=ids)
    finally:
        if cut is None:
            del os.environ["MIOFIND_CUT_FACTOR"]
        else:
            os.environ["MIOFIND_CUT_FACTOR"] = cut
    from miofind import tiered
    tiered.wait(300)        # the specialised builds, compiled in the background, are what runs from now on
    by = {s.solver_id: s for s in res}
    sols = {sid: by[sid] for sid in SINGLE + MULTI if sid in by}
    # a repeated find / get in one process: measured and stored once, read back once, then memoised
    miofind.find_solutions(p)
    assert miofind.find_solutions(p).source == "db"
    k = cupy.RawKernel(r'extern "C" __global__ void k(const float* a, const float* b, float* c, int n)'
                       r'{ int i = threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }', "k")
    n = cupy.int32(8)
    objs = _bound(paths, sols, k, n, x, w, y, cx, cw, cy)
    per = {path: [] for path in paths}
    for _ in range(rounds):
        r = tiny_round(calls, paths, objs, sols, k, n, x, w, y, cx, cw, cy)
        for path in paths:
            per[path].append(r[path])
    set_path(paths[0])
    out = {"problem": p.key(), "paths": list(paths), "rounds": per}
    for path in paths:
        out[path] = _median_rows(per[path])
    # the first path's figures also at the top level (the layout of earlier results)
    out.update({k: v for k, v in out[paths[0]].items()})
    return out


def resnet50(dtype: str, layout: str = "NCHW", iters: int = 50) -> dict:
    import torch

    import miofind
    from miofind.invokers import _logical
    from miofind.models import model_problems

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    tdt = {"FP32": torch.float32, "FP16": torch.float16}[dtype]
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    rows = []
    found = []
    for p in model_problems("resnet50", batch=32, dtypes=(dtype,), layouts=(layout,)):
        res = miofind.find_solutions(p)           # the shipped DB answers; else a find
        own = [s for s in res if not s.solver_id.startswith("ConvCudnn")]
        cud = [s for s in res if s.solver_id.startswith("ConvCudnn")]
        found.append((p, res, own, cud))
    # compile (or load from the binary cache) every solution to be timed, in parallel threads
    from concurrent.futures import ThreadPoolExecutor
    todo = {(s.problem.key(), s.solver_id): s for _, res, own, cud in found for s in (res[:1] + own[:1] + cud[:1])}
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda s: s.prepare(), todo.values()))
    for p, res, own, cud in found:
        # torch's (N, C, *spatial) shapes; NHWC problems take channels_last tensors of them, no copies
        xs, ws_, ys = (_logical(s, lay) for s, lay in zip((p.x_shape, p.w_shape, p.y_shape), p.layouts))
        mk = lambda shape: torch.randn(shape, device="cuda", dtype=tdt).contiguous(memory_format=fmt)  # noqa: E731
        x, w, y = mk(xs), mk(ws_), mk(ys)
        kw = dict(stride=p.strides, padding=p.pads, dilation=p.dilations, groups=p.groups)
        if p.direction == "F":
            a, b, o = x, w, torch.empty_like(y)
            ref = lambda: torch.nn.functional.conv2d(x, w, **kw)  # noqa: E731
        elif p.direction == "B":
            a, b, o = y, w, torch.empty_like(x)
            ref = lambda: torch.nn.grad.conv2d_input(xs, w, y, **kw)  # noqa: E731
        else:
            a, b, o = y, x, torch.empty_like(w)
            ref = lambda: torch.nn.grad.conv2d_weight(x, ws_, y, **kw)  # noqa: E731

        def timed(fn):
            for _ in range(3):
                fn()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            s.record()
            for _ in range(iters):
                fn()
            e.record()
            e.synchronize()
            return s.elapsed_time(e) / iters

        row = {"key": p.key(), "direction": p.direction, "cudnn_torch_ms": timed(ref), "source": res.source}
        # the primary baseline: cuDNN's best plan through our own harness, on the same buffers
        for name, sols in (("cudnn_harness", cud), ("best", list(res)), ("own", own)):
            if sols:
                pr = sols[0].prepare()
                row[f"{name}_solver"] = sols[0].solver_id
                row[f"{name}_ms"] = timed(lambda: pr(a, b, o))
        rows.append(row)
        print(f"  {p.key():58s} cuDNN torch {row['cudnn_torch_ms']:.4f} harness {row.get('cudnn_harness_ms', float('nan')):.4f}"
              f"  best {row.get('best_solver')} {row.get('best_ms', float('nan')):.4f}  own {row.get('own_solver')} "
              f"{row.get('own_ms', float('nan')):.4f}", flush=True)
    summary = {}
    for d in "FBW":
        for name in ("best", "own"):
            for base in ("cudnn_harness", "cudnn_torch"):
                r = [x[f"{name}_ms"] / x[f"{base}_ms"] for x in rows
                     if x["direction"] == d and f"{name}_ms" in x and f"{base}_ms" in x]
                if r:
                    summary[f"{d}_{name}_vs_{base}"] = math.exp(sum(map(math.log, r)) / len(r))
    return {"dtype": dtype, "layout": layout, "rows": rows, "summary": summary}


COLD = r'''
import json, os, sys, time
import torch
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t0 = time.perf_counter()
import miofind
from miofind import find_solutions
t1 = time.perf_counter()
key = sys.argv[1]
res = find_solutions(key, mode="fast")
t2 = time.perf_counter()
sol = res[0]
p = sol.problem
x = torch.randn(p.io_shapes()[0], device="cuda"); w = torch.randn(p.io_shapes()[1], device="cuda")
y = torch.empty(p.io_shapes()[2], device="cuda")
torch.cuda.synchronize()
t3 = time.perf_counter()
miofind.run_solution(sol, x, w, y); torch.cuda.synchronize()
t4 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_find_ms": (t2 - t1) * 1e3, "first_run_ms": (t4 - t3) * 1e3,
                  "total_ms": (t2 - t0 + t4 - t3) * 1e3, "source": res.source, "solver": sol.solver_id}))
'''

TORCH_FIRST = r'''
import json, time, torch
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
torch.backends.cudnn.benchmark = True
x = torch.randn(32, 64, 56, 56, device="cuda"); w = torch.randn(64, 64, 3, 3, device="cuda")
torch.cuda.synchronize(); t0 = time.perf_counter()
torch.nn.functional.conv2d(x, w, padding=1); torch.cuda.synchronize()
print(json.dumps({"torch_first_benchmark_conv_ms": (time.perf_counter() - t0) * 1e3}))
'''


def cold(rounds: int = 3) -> dict:
    key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
    env = dict(os.environ)
    runs = []
    for i in range(rounds + 1):   # the first fills the kernel cache; the others are timed
        out = subprocess.run([sys.executable, "-c", COLD, key], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            return {"error": out.stderr[-2000:]}
        if i:
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    t = json.loads(subprocess.run([sys.executable, "-c", TORCH_FIRST], capture_output=True, text=True,
                                  check=True).stdout.strip().splitlines()[-1])
    cli = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "miofind", "find", "--mode", "fast", "conv", "-n", "32", "-c", "64",
                            "-H", "56", "-W", "56", "-k", "64", "-y", "3", "-x", "3", "-p", "1", "-q", "1", "-F", "1"],
                           capture_output=True, text=True, env=env)
        cli.append({"wall_ms": (time.perf_counter() - t0) * 1e3, "rc": r.returncode})
    med = {k: statistics.median(r[k] for r in runs) for k in ("import_ms", "first_find_ms", "first_run_ms", "total_ms")}
    return {"runs": runs, "median": med, **t, "cli": cli,
            "cli_median_wall_ms": statistics.median(c["wall_ms"] for c in cli)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results/hot-path")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--skip-resnet", action="store_true")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--configs", default="FP32:NCHW,FP16:NCHW,FP16:NHWC",
                    help="ResNet-50 comparisons to run, dtype:layout comma-separated")
    ap.add_argument("--paths", default="native,stepwise,python",
                    help="launch paths of the tiny problem, comma-separated: native (miofind._native, a solution of "
                         "several calls replayed as one native call, cuBLASLt matmuls as their captured kernels), "
                         "replay-calls (the same, each matmul a cuBLASLt call), stepwise (miofind._native, each call its own), "
                         "python (ctypes and CuPy); the first one runs the rest of the benchmark")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the paths (median reported)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from miofind import cublas
    cublas.settle()         # steady-state calls: none of them on the bridge GEMM (cuBLASLt set up first)
    paths = tuple(a.paths.split(","))
    result = {"tiny": tiny(a.calls, paths, a.rounds)}
    if not a.skip_cold:
        result["cold"] = cold()
    if not a.skip_resnet:
        result["resnet50"] = [resnet50(*c.split(":")) for c in a.configs.split(",")]
    with open(os.path.join(a.out, "bench_overhead.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    t = result["tiny"]
    lines = ["# Host time of the run path (H100)", "",
             f"Tiny problem `{t['problem']}`, host µs per call, median over {a.rounds} alternating round(s) of the "
             f"launch paths {', '.join(paths)} in one process (native: `miofind._native`, a prepared solution replayed as "
             "one native call, cuBLASLt's matmuls as their captured kernels; replay-calls: the same with each matmul a "
             "cuBLASLt call; stepwise: `miofind._native`, each launch or library call its own call; python: ctypes and "
             "CuPy)."]
    for path in paths:
        r0 = t[path]
        lines += ["", f"**{path}**", "", "| call | µs |", "| --- | ---: |"]
        for k, v in r0["anchors_us"].items():
            lines.append(f"| {k} | {v:.2f} |")
        lines.append(f"| find_solutions, repeated (memo) | {r0['repeated_find_us']:.2f} |")
        lines.append(f"| get_solutions, repeated (memo) | {r0['repeated_get_us']:.2f} |")
        lines += ["", "| solution | launches | prepared (torch) | prepared (torch, stream+ws given) | prepared (CuPy) | "
                  "run_solution (allocating) | run_solution (into y) | checks+pointers | stream query | invoker | rel err |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for sid, r in r0["solutions"].items():
            lines.append(f"| {sid} | {r['launches']} | {r['prepared_torch_us']:.2f} | "
                         f"{r['prepared_torch_stream_ws_us']:.2f} | {r['prepared_cupy_us']:.2f} | "
                         f"{r['run_solution_alloc_us']:.2f} | {r['run_solution_into_us']:.2f} | "
                         f"{r['part_checks_pointers_us']:.2f} | {r['part_stream_query_us']:.2f} | "
                         f"{r['part_invoker_us']:.2f} | {r['rel_err']:.1e} |")
    if len(paths) > 1:
        lines += ["", "Prepared call with torch tensors per launch path (µs; each extra call: (time - the path's "
                  "single-launch tiled direct, else implicit GEMM) / (calls - 1)):", "",
                  "| solution | calls | " + " | ".join(paths) + " | " + " | ".join(f"{pa} per extra call" for pa in paths)
                  + " |", "| --- | ---: |" + " ---: |" * (2 * len(paths))]
        base = {pa: (t[pa]["solutions"].get("ConvDirectTiledFwd") or t[pa]["solutions"].get("ConvImplicitGemmFwd")
                     or {}).get("prepared_torch_us") for pa in paths}
        for sid in t[paths[0]]["solutions"]:
            rs = [t[pa]["solutions"].get(sid, {}) for pa in paths]
            n = rs[0]["launches"] or 1
            ex = lambda pa, r: ((r["prepared_torch_us"] - base[pa]) / (n - 1)  # noqa: E731
                                if n > 1 and base[pa] and r else float("nan"))
            lines.append(f"| {sid} | {n} | " + " | ".join(f"{r.get('prepared_torch_us', float('nan')):.2f}" for r in rs)
                         + " | " + " | ".join(f"{ex(pa, r):.2f}" for pa, r in zip(paths, rs)) + " |")
    if "cold" in result and "median" in result["cold"]:
        c = result["cold"]
        m = c["median"]
        lines += ["", "Cold process (after CUDA init; median of 3, kernel cache warm):", "",
                  f"- import miofind: {m['import_ms']:.0f} ms; first find_solutions: {m['first_find_ms']:.1f} ms; "
                  f"first run: {m['first_run_ms']:.1f} ms; together {m['total_ms']:.0f} ms "
                  f"(torch's first benchmark-mode conv: {c['torch_first_benchmark_conv_ms']:.0f} ms)",
                  f"- `miofind find --mode fast ...` on a DB hit, whole process: {c['cli_median_wall_ms']:.0f} ms wall"]
    elif "cold" in result:
        lines += ["", f"Cold process: failed: {result['cold'].get('error', '')[:500]}"]
    for r in result.get("resnet50", []):
        s = r["summary"]
        lines += ["", f"ResNet-50 N=32 {r['dtype']} {r['layout']}, prepared path, time ratio (geomean over layers; below 1: "
                  "ours faster) against cuDNN's best plan in our harness on the same buffers (primary) and cuDNN through "
                  "PyTorch (secondary), all timed back to back:", "",
                  "| direction | find's pick / cuDNN harness | best own / cuDNN harness | find's pick / cuDNN torch | "
                  "best own / cuDNN torch |", "| --- | ---: | ---: | ---: | ---: |"]
        for d in "FBW":
            g = lambda k: s.get(f"{d}_{k}", float("nan"))  # noqa: E731
            lines.append(f"| {d} | {g('best_vs_cudnn_harness'):.3f} | {g('own_vs_cudnn_harness'):.3f} | "
                         f"{g('best_vs_cudnn_torch'):.3f} | {g('own_vs_cudnn_torch'):.3f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "bench_overhead.md"), "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
