"""Cold start on the GPU: the find of unseen shapes against cuDNN's benchmark mode (issue 18).

Layers: a few ResNet- and Inception-like convolutions that neither ``tests/shapes.py`` nor the shipped
FindDB holds (batch 16 or 24: the shipped DB has batch 32 and 1 only; ``unseen()`` checks it, and
``tests/core/test_bench_cold.py`` too), each F, B and W, in FP32 NCHW (TF32 off on both sides) and
FP16 NHWC. Per layer, data type and direction, side by side:

- **torch**: cuDNN's benchmark mode (``torch.backends.cudnn.benchmark = True``), the first call of a
  shape it has not seen (``conv2d`` for F, ``aten.convolution_backward`` with one output for B and W),
  synchronised, in a child process whose cuDNN is warmed up on another shape first: one child per layer and data
  type, as miofind's warm finds run (a process that ran other layers first has loaded kernels those layers' plans
  share: CUDA loads a kernel's module at its first launch, 7-24 ms for some cuDNN engines' kernels in
  session-nov27f's call 4, and those of the same engine on a later shape cost nothing); ``--torch-one-process``
  runs every row in one child instead, as this benchmark did up to session-nov27f;
- **miofind, empty caches**: ``find_solutions`` (normal mode, the shipped DB beneath a new, empty user
  DB) in a child process with a fresh ``MIOFIND_KERNEL_CACHE``, a fresh ``CUPY_CACHE_DIR`` and a fresh
  ``CUDA_CACHE_PATH`` (a fresh install; CUDA's JIT cache holds the kernels cuFFT compiles when a transform size's
  first plan is made, 40-240 ms each on an H200: bench/results/session-nov28h/call6_cufft/): CUDA, the import and
  ``warm_up()`` are done before the first find is timed, nothing else;
- **miofind, warm kernel cache**: the same finds in a second child on the caches the first one left
  (and another new, empty user DB), after one untimed find of a warm-up shape: the steady cost of
  finding a shape the process has not seen.

Each find's ``FindResult.timing`` is kept (lookup, compile, float64 reference, verify, timing, store,
per candidate). ``--resnet50`` also times the first training step of torchvision's ResNet-50 at batch
48 (unshipped) in a fresh process: cuDNN's benchmark mode against ``miofind.torch`` with an empty user
DB (``bench_models.first_iteration``), with the kernel cache as it is and with empty caches.

Targets (issue 18), printed beside the figures: a find of a warm-cache process <= 150 ms and <= 3x
torch's first call; <= 500 ms with empty caches; ResNet-50's first step <= 5 s.

    python bench/bench_cold.py --out bench/results/cold-find [--shapes a,b] [--dtypes fp32,fp16]
        [--dirs FBW] [--resnet50] [--skip-layers]

Writes ``bench_cold.json`` and ``bench_cold.md`` under ``--out``. Needs a GPU, PyTorch and CuPy. With
BENCH_COLD_PROFILE=DIR each of miofind's finds runs under cProfile, its stats written to DIR (a diagnosis:
the times it reports are then inflated). With BENCH_COLD_TIMELINE=DIR each find writes to DIR the calls of the
``TIMELINE`` functions it made, each with its thread, start and end (a wrapper's cost per call, not cProfile's per
function). With BENCH_COLD_SWITCH_INTERVAL=SECONDS miofind's children run at that
thread switch interval (``sys.setswitchinterval``; Python's default 0.005), to see how long background threads (plan
prefetches, compile workers) wait for the GIL the find's own thread holds. With BENCH_COLD_GC=1 each of miofind's
rows lists the garbage collector's pauses during its find ("gc": [generation, ms] each); BENCH_COLD_GC_FREEZE=1 moves
what the child holds after its warm-up finds out of the collector's scans (``gc.freeze``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> ProblemDescription.make keywords (direction, layout and data type are added per row)
SHAPES = {
    "r50_128_28_3x3_n16": dict(n=16, c=128, k=128, in_size=(28, 28), filter_size=3, pads=1),
    "r50_256to64_56_1x1_n24": dict(n=24, c=256, k=64, in_size=(56, 56), filter_size=1),
    "r50_256_28_3x3s2_n16": dict(n=16, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, strides=2),
    "inc_48to64_35_5x5_n16": dict(n=16, c=48, k=64, in_size=(35, 35), filter_size=5, pads=2),
    "inc_160_17_1x7_n16": dict(n=16, c=160, k=160, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)),
}
# an untimed find first, so that the warm-cache figures are those of a process past its first find
WARMUP_SHAPE = dict(n=8, c=32, k=32, in_size=(20, 20), filter_size=3, pads=1)
DTYPES = {"fp32": ("FP32", "NCHW"), "fp16": ("FP16", "NHWC")}
DIRECTIONS = "FBW"
TARGET_WARM_MS = 150.0
TARGET_WARM_RATIO = 3.0
TARGET_EMPTY_MS = 500.0
TARGET_RESNET_S = 5.0
RESNET_BATCH = 48


def problem(shape: str, dtype: str, direction: str):
    """The ProblemDescription of a row: ``SHAPES[shape]`` (or the warm-up shape for ``"warmup"``)."""
    from miofind.problem import ProblemDescription

    dt, layout = DTYPES[dtype]
    kw = WARMUP_SHAPE if shape == "warmup" else SHAPES[shape]
    return ProblemDescription.make(direction, dtype=dt, layout=layout, **kw)


def unseen(shapes=None, system_db: str | None = None) -> list[str]:
    """The keys of the benchmark's problems that the shipped FindDB or tests/shapes.py holds (the
    benchmark is only honest when this is empty). Needs no GPU."""
    from miofind.db import FindDB

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        from shapes import SHAPES as TEST_SHAPES
    finally:
        sys.path.pop(0)
    path = system_db or os.path.join(ROOT, "finddb", "sm_90-132.sqlite")
    with FindDB(path, readonly=True) as db:
        known = set(db.problem_keys(None))
    test_sizes = {tuple(sorted((k, str(v)) for k, v in kw.items())) for kw in TEST_SHAPES.values()}
    seen = []
    for s in shapes or SHAPES:
        if tuple(sorted((k, str(v)) for k, v in SHAPES[s].items())) in test_sizes:
            seen.append(f"{s}: in tests/shapes.py")
        for dt in DTYPES:
            for d in DIRECTIONS:
                k = problem(s, dt, d).key()
                if k in known:
                    seen.append(k)
    return seen


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, checked: unknown shapes, data types or directions are one-line errors."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="results folder (bench_cold.json and bench_cold.md)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, of fp32 (NCHW), fp16 (NHWC)")
    ap.add_argument("--dirs", default=DIRECTIONS, help="directions, of F, B, W")
    ap.add_argument("--resnet50", action="store_true",
                    help=f"also the first training step of ResNet-50 at batch {RESNET_BATCH} (fresh processes)")
    ap.add_argument("--resnet-configs", default="fp32",
                    help="comma-separated, of fp32 and amp (channels_last FP16 autocast)")
    ap.add_argument("--skip-layers", action="store_true", help="only --resnet50")
    ap.add_argument("--installed-cache", metavar="DIR",
                    help="the kernel cache `miofind warmup` filled: the empty-caches processes start from a copy "
                         "of it (a fresh install that ran warmup)")
    ap.add_argument("--installed-cupy-cache", metavar="DIR",
                    help="CuPy's kernel cache as `miofind warmup` on a GPU left it (CUPY_CACHE_DIR): the empty-caches "
                         "processes start from a copy of it")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child process")
    ap.add_argument("--torch-one-process", action="store_true",
                    help="torch's first calls of every row in one child (the way up to session-nov27f), not one "
                         "child per layer and data type as miofind's warm finds")
    ap.add_argument("--child", choices=("torch", "miofind"), help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    ap.add_argument("--warmup", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.shapes = [s for s in a.shapes.split(",") if s]
    a.dtypes = [d.lower() for d in a.dtypes.split(",") if d]
    a.dirs = a.dirs.upper()
    a.resnet_configs = [c for c in a.resnet_configs.split(",") if c]
    for s in a.shapes:
        if s not in SHAPES:
            ap.error(f"--shapes: {s!r} is not one of {', '.join(SHAPES)}")
    for d in a.dtypes:
        if d not in DTYPES:
            ap.error(f"--dtypes: {d!r} is not one of {', '.join(DTYPES)}")
    if not a.dirs or any(d not in DIRECTIONS for d in a.dirs):
        ap.error(f"--dirs: {a.dirs!r}: expected letters of {DIRECTIONS}")
    for c in a.resnet_configs:
        if c not in ("fp32", "amp"):
            ap.error(f"--resnet-configs: {c!r} is not one of fp32, amp")
    if a.child is None and not a.out:
        ap.error("--out is required")
    if a.skip_layers and not a.resnet50:
        ap.error("--skip-layers leaves nothing to run without --resnet50")
    return a


def rows_of(args) -> list[tuple[str, str, str]]:
    """(shape, dtype, direction) of every layer row, in order."""
    return [(s, dt, d) for s in args.shapes for dt in args.dtypes for d in args.dirs]


# -- children --------------------------------------------------------------------------------------

def _torch_child(rows) -> None:
    """Print one JSON line per row: cuDNN benchmark mode's first call of the row's shape, in ms."""
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    def tensors(shape, dtype):
        p = problem(shape, dtype, "F")
        tdt = torch.float32 if DTYPES[dtype][0] == "FP32" else torch.float16
        fmt = torch.channels_last if DTYPES[dtype][1] == "NHWC" else torch.contiguous_format
        x = torch.randn(p.n, p.c, *p.in_size, device="cuda", dtype=tdt).to(memory_format=fmt)
        w = torch.randn(p.k, p.c // p.groups, *p.filter_size, device="cuda", dtype=tdt).to(memory_format=fmt)
        dy = torch.randn(p.n, p.k, *p.out_size, device="cuda", dtype=tdt).to(memory_format=fmt)
        return p, x, w, dy

    def call(shape, dtype, direction):
        p, x, w, dy = tensors(shape, dtype)
        kw = dict(stride=list(p.strides), padding=list(p.pads), dilation=list(p.dilations), groups=p.groups)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if direction == "F":
            F.conv2d(x, w, **kw)
        else:
            mask = [direction == "B", direction == "W", False]
            torch.ops.aten.convolution_backward(dy, x, w, None, kw["stride"], kw["padding"], kw["dilation"], False,
                                                [0, 0], kw["groups"], mask)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3

    for dtype in sorted({r[1] for r in rows}):
        for d in DIRECTIONS:
            call("warmup", dtype, d)      # cuDNN loaded and its handle made: not part of a shape's first call
    for shape, dtype, d in rows:
        print(json.dumps({"shape": shape, "dtype": dtype, "direction": d, "torch_first_ms": call(shape, dtype, d)}),
              flush=True)


# what BENCH_COLD_TIMELINE wraps (module, attribute path): where a warm find's wall time goes, per thread
TIMELINE = [
    ("miofind.find", n) for n in (
        "candidates", "db_answer", "prefetch_solvers", "_fast_reads", "prefetch_cudnn", "recorded_times",
        "expected_order", "predicted_losers", "to_isolate", "benchmark", "prepare_all", "_prepare", "first_run",
        "defer_candidates", "find_configs", "store_solutions", "record_failures", "mark_deferred", "store_dbs",
        "tuned_config", "settled_failures", "_timed_reference")] + [
    ("miofind.tiered", n) for n in ("Solutions.specialised", "prepare", "deferrable", "after_find")] + [
    ("miofind.compile", n) for n in ("compile_kernel", "cached_cubin", "is_compiled", "_load", "nvrtc_compile")] + [
    ("miofind.harness", n) for n in ("Harness.__init__", "Harness.ready", "Harness.run_poisoned",
                                     "Harness.verify_output", "timed_runs")] + [
    ("miofind.verify", n) for n in ("random_array", "to_float64", "poison", "errors_of")] + [
    ("miofind.db.fastread", n) for n in ("Reader._rows", "Reader._connect")] + [
    ("miofind.invokers", "build_invoker"), ("miofind.cublas", "handle"), ("miofind.generic", "_copy_stream"),
    ("miofind.harness", "Harness.shared")] + [
    ("miofind.solvers.cudnn_base", n) for n in ("plan_graph", "PlanGraph.build", "first_plans", "first_runs",
                                                "prefetch_wait", "NativePlan.__init__", "NativePlan.run")]


def _timeline_wrap(events: list) -> None:
    """Wrap the TIMELINE functions so that each call appends (name, thread, start, end) to ``events``."""
    import functools
    import importlib
    import threading

    for mod_name, path in TIMELINE:
        try:
            owner = importlib.import_module(mod_name)
            *outer, attr = path.split(".")
            for o in outer:
                owner = getattr(owner, o)
            fn = getattr(owner, attr)
        except (ImportError, AttributeError):
            continue

        def wrapped(*a, _fn=fn, _name=f"{mod_name.rsplit('.', 1)[-1]}.{path}", **kw):
            t0 = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                events.append((_name, threading.current_thread().name, t0, time.perf_counter()))
        setattr(owner, attr, functools.wraps(fn)(wrapped))


def _miofind_child(rows, warmup: bool) -> None:
    """Print one JSON line per row: the normal-mode find of the row's problem on an empty user DB
    (``MIOFIND_DB``, set by the parent), with its timing breakdown."""
    import cupy

    cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(0).use()
    from miofind.api import find_solutions, warm_up

    warm_up()
    swi = os.environ.get("BENCH_COLD_SWITCH_INTERVAL")     # seconds: the child's thread switch interval (a diagnosis)
    if swi:
        sys.setswitchinterval(float(swi))
    if warmup:
        for dtype in sorted({r[1] for r in rows}):
            for d in DIRECTIONS:
                find_solutions(problem("warmup", dtype, d), mode="normal")
    import gc

    gc_log = bool(os.environ.get("BENCH_COLD_GC"))     # each find's collector pauses (generation, ms) in its row
    gc_pauses: list = []
    if gc_log:
        gc_t0 = [0.0]

        def _gc_pause(phase, info):
            if phase == "start":
                gc_t0[0] = time.perf_counter()
            else:
                gc_pauses.append((info["generation"], (time.perf_counter() - gc_t0[0]) * 1e3))
        gc.callbacks.append(_gc_pause)
    if os.environ.get("BENCH_COLD_GC_FREEZE"):      # a diagnosis: what the warm-up left out of later collections
        gc.freeze()
    prof_dir = os.environ.get("BENCH_COLD_PROFILE")    # a folder: each find under cProfile, its stats there
    timeline_dir = os.environ.get("BENCH_COLD_TIMELINE")   # a folder: each find's calls of TIMELINE, per thread
    events: list = []
    if timeline_dir:
        _timeline_wrap(events)
    for i, (shape, dtype, d) in enumerate(rows):
        p = problem(shape, dtype, d)
        if prof_dir:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
        events.clear()
        gc_pauses.clear()
        t0 = time.perf_counter()
        res = find_solutions(p, mode="normal")
        wall = (time.perf_counter() - t0) * 1e3
        if timeline_dir:
            os.makedirs(timeline_dir, exist_ok=True)
            with open(os.path.join(timeline_dir, f"{os.getpid()}-{i}-{shape}-{dtype}-{d}.txt"), "w") as fh:
                fh.write(f"find {wall:.2f} ms; calls of the TIMELINE functions: start / end ms from the find's "
                         "start, wall ms, thread\n")
                for name, thread, a, b in sorted(events, key=lambda e: e[2]):
                    fh.write(f"{(a - t0) * 1e3:8.2f} {(b - t0) * 1e3:8.2f} {(b - a) * 1e3:7.2f}  {thread:<24} "
                             f"{name}\n")
        if prof_dir:
            prof.disable()
            os.makedirs(prof_dir, exist_ok=True)
            with open(os.path.join(prof_dir, f"{os.getpid()}-{i}-{shape}-{dtype}-{d}.txt"), "w") as fh:
                for order in ("cumulative", "tottime"):
                    pstats.Stats(prof, stream=fh).sort_stats(order).print_stats(80)
        print(json.dumps({"shape": shape, "dtype": dtype, "direction": d, "key": p.key(), "find_ms": wall,
                          "source": res.source, "solutions": len(res), "cut": sum(1 for s in res if s.cut),
                          "best": res[0].solver_id if len(res) else None,
                          "best_ms": res[0].time_ms if len(res) else None,
                          "failures": [f"{f.solver_id}: {f.stage}" for f in res.failures],
                          "timing": res.timing}
                         | ({"gc": [[g, round(ms, 3)] for g, ms in gc_pauses]} if gc_log else {})),
              flush=True)
    # the background work the finds left (specialisations, deferred solvers: miofind.tiered) would be waited
    # for at exit; its records would go to this scratch user DB, so the child leaves at once, its spawned
    # compile workers first (they hold the parent's pipes open)
    import multiprocessing

    for proc in multiprocessing.active_children():
        proc.kill()
    sys.stderr.flush()
    os._exit(0)


def run_child(kind: str, rows, env: dict, timeout: float, warmup: bool = False) -> list[dict]:
    """Run one child process on ``rows``; its JSON lines (a child that fails raises, with its stderr)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--rows", json.dumps(rows)]
    if warmup:
        cmd.append("--warmup")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if r.returncode:
        raise RuntimeError(f"{kind} child failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]


def child_env(**over) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MIOFIND_DB", "MIOPEN_USER_DB_PATH")}
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(over)
    return env


def _fresh_cache(d: str, args, which: str = "cubin") -> str:
    """A new kernel cache (``cubin``: miofind's, ``cupy``: CuPy's) under ``d``: empty, or a copy of
    ``--installed-cache`` / ``--installed-cupy-cache`` (what ``miofind warmup`` leaves at install time)."""
    path = os.path.join(d, which)
    seed = args.installed_cache if which == "cubin" else args.installed_cupy_cache
    if seed:
        import shutil
        shutil.copytree(seed, path)
    return path


def _fresh_jit_cache(d: str) -> str:
    """A new, empty CUDA JIT cache under ``d`` (``CUDA_CACHE_PATH``): a fresh install's, which has not kept the
    kernels cuFFT compiled at an earlier process's plans."""
    path = os.path.join(d, "cuda-jit")
    os.makedirs(path, exist_ok=True)
    return path


def installed_stamp(path: str | None) -> dict | None:
    """The `miofind warmup` stamp of ``--installed-cache`` (``miofind.warmup.read_stamp``), None where there is none:
    that warmup did not finish (cut short, or with errors), so its copies are not what a fresh install has. Said on
    stderr."""
    if not path:
        return None
    from miofind.warmup import read_stamp

    got = read_stamp(path)
    if got is None:
        print(f"bench_cold: --installed-cache {path} has no finished `miofind warmup` stamp: its empty-cache rows are "
              "not fresh-install figures", file=sys.stderr)
    return got


def layers(args) -> list[dict]:
    """Every layer row: torch's first call, miofind's find with empty caches and with a warm kernel
    cache, each shape and data type in its own pair of child processes."""
    rows = rows_of(args)
    out = {}
    if args.torch_one_process:
        out.update({(r["shape"], r["dtype"], r["direction"]): r for r in run_child("torch", rows, child_env(),
                                                                                   args.timeout)})
    for shape in args.shapes:
        for dtype in args.dtypes:
            mine = [r for r in rows if r[0] == shape and r[1] == dtype]
            if not args.torch_one_process:
                out.update({(r["shape"], r["dtype"], r["direction"]): r
                            for r in run_child("torch", mine, child_env(), args.timeout)})
            with tempfile.TemporaryDirectory(prefix="bench_cold_") as d:
                caches = dict(MIOFIND_KERNEL_CACHE=_fresh_cache(d, args), CUPY_CACHE_DIR=_fresh_cache(d, args, "cupy"),
                              CUDA_CACHE_PATH=_fresh_jit_cache(d))
                empty = run_child("miofind", mine, child_env(MIOFIND_DB=f"sqlite:///{d}/empty.sqlite", **caches),
                                  args.timeout)
                warm = run_child("miofind", mine, child_env(MIOFIND_DB=f"sqlite:///{d}/warm.sqlite", **caches),
                                 args.timeout, warmup=True)
            for e, w in zip(empty, warm):
                row = out[(e["shape"], e["dtype"], e["direction"])]
                row["key"] = e["key"]
                row["empty"] = e
                row["warm"] = w
                row["ratio_warm_vs_torch"] = w["find_ms"] / row["torch_first_ms"] if row["torch_first_ms"] else None
                print(json.dumps({k: row[k] for k in ("key", "torch_first_ms", "ratio_warm_vs_torch")}
                                 | {"warm_ms": w["find_ms"], "empty_ms": e["find_ms"]}), flush=True)
    return [out[r] for r in rows]


def resnet50(args) -> list[dict]:
    """The first training step of ResNet-50 at batch RESNET_BATCH in fresh processes: cuDNN's
    benchmark mode, then miofind.torch on an empty user DB with the kernel cache as it is, and with
    empty caches."""
    sys.path.insert(0, HERE)
    import bench_models

    out = []
    for cfg in args.resnet_configs:
        config = f"train{RESNET_BATCH}-{cfg}"
        row = {"model": "resnet50", "config": config}
        cudnn = bench_models.first_iteration("resnet50", config, "cudnn", child_env())
        row["cudnn_first_s"], row["cudnn_exit_s"] = cudnn["first_s"], cudnn["exit_s"]
        with tempfile.TemporaryDirectory(prefix="bench_cold_r50_") as d:
            first = bench_models.first_iteration("resnet50", config, "miofind",
                                                 child_env(MIOFIND_DB=f"sqlite:///{d}/warm.sqlite"))
            row["miofind_first_s"], row["miofind_stats"] = first["first_s"], first["stats"]
            row["miofind_exit_s"], row["miofind_background_pending"] = first["exit_s"], first["background_pending"]
            empty = bench_models.first_iteration("resnet50", config, "miofind", child_env(
                MIOFIND_DB=f"sqlite:///{d}/empty.sqlite", MIOFIND_KERNEL_CACHE=_fresh_cache(d, args),
                CUPY_CACHE_DIR=_fresh_cache(d, args, "cupy"), CUDA_CACHE_PATH=_fresh_jit_cache(d)))
            row["miofind_empty_caches_first_s"], row["miofind_empty_caches_stats"] = empty["first_s"], empty["stats"]
            row["miofind_empty_caches_exit_s"] = empty["exit_s"]
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


# -- report ----------------------------------------------------------------------------------------

def _ok(value, target) -> str:
    if value is None:
        return ""
    return "yes" if value <= target else "**no**"


def markdown(layer_rows: list[dict], resnet_rows: list[dict], meta: dict) -> str:
    """The results as markdown: one table of layers (targets beside the figures), one of where the
    warm finds' time went, one of ResNet-50's first step."""
    f = lambda v, p=1: "" if v is None else f"{v:.{p}f}"  # noqa: E731
    out = [f"# Cold find against cuDNN's benchmark mode on {meta.get('device', '?')}", "",
           f"`{meta.get('command', '')}`  ",
           f"PyTorch {meta.get('torch', '?')}, cuDNN {meta.get('cudnn', '?')}, miofind {meta.get('miofind', '?')}. "
           "Find = `find_solutions` in normal mode on an empty user DB (shipped DB beneath), wall ms; torch = "
           "cuDNN benchmark mode's first call of the shape, synchronised, wall ms, "
           + ("every row in one process" if meta.get("torch_one_process") else
              "in a process per layer and type as miofind's warm finds") + ". Warm: kernel cache and "
           "CuPy cache (and CUDA's JIT cache) from an earlier process, after one untimed find of another shape; empty: "
           "fresh caches, CUDA's JIT cache (CUDA_CACHE_PATH) empty"
           + (" (the kernel cache as `miofind warmup` left it: a fresh install that ran it)" if meta.get("installed_cache")
              else "") + (" (CuPy's cache too)" if meta.get("installed_cupy_cache") else "") + ", "
           f"the process's first finds. Targets: warm <= {TARGET_WARM_MS:g} ms and <= {TARGET_WARM_RATIO:g}x "
           f"torch; empty <= {TARGET_EMPTY_MS:g} ms.", ""]
    if meta.get("installed_cache") and not meta.get("installed_cache_stamp"):
        out += ["**The installed kernel cache has no finished `miofind warmup` stamp (cut short, or it failed): the "
                "empty-cache rows are not fresh-install figures.**", ""]
    if layer_rows:
        out += ["| layer | type | dir | torch first ms | find warm ms | warm / torch | warm target | "
                "find empty ms | empty target | solutions (cut) | best |",
                "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- | ---: | --- |"]
        for r in layer_rows:
            w, e = r.get("warm", {}), r.get("empty", {})
            ratio = r.get("ratio_warm_vs_torch")
            warm_ok = None if not w else ("yes" if w["find_ms"] <= TARGET_WARM_MS and ratio is not None
                                          and ratio <= TARGET_WARM_RATIO else "**no**")
            out.append(f"| {r['shape']} | {r['dtype']} | {r['direction']} | {f(r.get('torch_first_ms'))} | "
                       f"{f(w.get('find_ms'))} | {f(ratio, 2)} | {warm_ok or ''} | {f(e.get('find_ms'))} | "
                       f"{_ok(e.get('find_ms'), TARGET_EMPTY_MS)} | {w.get('solutions', '')} ({w.get('cut', '')}) | "
                       f"{w.get('best') or ''} |")
        out += ["", "Where the time went (warm, then empty caches; ms): lookup (DBs read, candidates listed), select "
                "(predicted losers, child-process checks), setup (inputs made, reference queued), configs (cuDNN builds "
                "its plans there), compile (wall, of which the reference's compile), float64 reference (GPU time), "
                "measure (wall; of it verify + timing), store, other (the rest of the find's wall time).", "",
                "| layer | type | dir | warm: lookup / select / setup / configs / compile (ref) / reference / measure "
                "(verify + timing) / store / other | empty: the same |",
                "| --- | --- | --- | --- | --- |"]

        def parts(t):
            if not t:
                return "(answered without a benchmark)"
            other = None
            if all(k in t for k in ("total_ms", "lookup_ms", "select_ms", "benchmark_ms", "store_ms", "setup_ms",
                                    "configs_ms", "compile_ms", "isolate_ms", "measure_ms")):
                other = (t["total_ms"] - t["lookup_ms"] - t["select_ms"] - t["setup_ms"] - t["configs_ms"]
                         - t["compile_ms"] - t["isolate_ms"] - t["measure_ms"] - t["store_ms"])
            return (f"{f(t.get('lookup_ms'))} / {f(t.get('select_ms'))} / {f(t.get('setup_ms'))} / "
                    f"{f(t.get('configs_ms'))} / {f(t.get('compile_ms'))} ({f(t.get('reference_compile_ms'))}) / "
                    f"{f(t.get('reference_ms'))} / {f(t.get('measure_ms'))} ({f(t.get('verify_ms'))} + "
                    f"{f(t.get('timing_ms'))}) / {f(t.get('store_ms'))} / {f(other)}")
        for r in layer_rows:
            out.append(f"| {r['shape']} | {r['dtype']} | {r['direction']} | {parts(r.get('warm', {}).get('timing'))} | "
                       f"{parts(r.get('empty', {}).get('timing'))} |")
    if resnet_rows:
        out += ["", f"ResNet-50 first training step at batch {RESNET_BATCH}, fresh process (s); target <= "
                f"{TARGET_RESNET_S:g} s. miofind: empty user DB over the shipped DB. Exit s: from the step's end to "
                "the process's (background jobs joined or stopped: MIOFIND_EXIT_WAIT).", "",
                "| config | cuDNN benchmark s | miofind s | target | finds run | find s | miofind empty caches s | "
                "target | exit s: cuDNN / miofind / empty caches | background jobs at the step's end |",
                "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- | ---: |"]
        for r in resnet_rows:
            st = r.get("miofind_stats") or {}
            out.append(f"| {r['config']} | {f(r.get('cudnn_first_s'), 2)} | {f(r.get('miofind_first_s'), 2)} | "
                       f"{_ok(r.get('miofind_first_s'), TARGET_RESNET_S)} | {st.get('finds_run', '')} | "
                       f"{f(st.get('find_ms', 0) / 1e3 if st else None, 2)} | "
                       f"{f(r.get('miofind_empty_caches_first_s'), 2)} | "
                       f"{_ok(r.get('miofind_empty_caches_first_s'), TARGET_RESNET_S)} | "
                       f"{f(r.get('cudnn_exit_s'), 2)} / {f(r.get('miofind_exit_s'), 2)} / "
                       f"{f(r.get('miofind_empty_caches_exit_s'), 2)} | {r.get('miofind_background_pending', '')} |")
    return "\n".join(out) + "\n"


def write(out_dir: str, layer_rows, resnet_rows, meta) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench_cold.json"), "w") as fh:
        json.dump({"meta": meta, "layers": layer_rows, "resnet50": resnet_rows}, fh, indent=1)
    with open(os.path.join(out_dir, "bench_cold.md"), "w") as fh:
        fh.write(markdown(layer_rows, resnet_rows, meta))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        rows = [tuple(r) for r in json.loads(args.rows or "[]")]
        (_torch_child if args.child == "torch" else lambda r: _miofind_child(r, args.warmup))(rows)
        return 0
    seen = unseen(args.shapes)
    if seen:
        print(f"bench_cold: these problems are not unseen: {', '.join(seen)}", file=sys.stderr)
        return 2
    import torch

    import miofind

    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "miofind": miofind.__version__,
            "installed_cache": bool(args.installed_cache), "installed_cupy_cache": bool(args.installed_cupy_cache),
            "torch_one_process": args.torch_one_process,
            "installed_cache_stamp": installed_stamp(args.installed_cache),
            "command": "python bench/bench_cold.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    layer_rows, resnet_rows = [], []
    if not args.skip_layers:
        layer_rows = layers(args)
        write(args.out, layer_rows, resnet_rows, meta)
    if args.resnet50:
        resnet_rows = resnet50(args)
    write(args.out, layer_rows, resnet_rows, meta)
    print(markdown(layer_rows, resnet_rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
