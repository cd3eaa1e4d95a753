"""Where the first find's time goes in a new process, on the GPU (issue 14): new processes with CUDA up,
each printing one line: ``versions`` (cuDNN's versions read without importing the frontend, against
the imported frontend's), ``cudnn`` (the frontend's import alone), ``plain`` (import miofind, then
``find_solutions`` of one shipped-DB problem), ``prof`` (the same under cProfile, 45 entries),
``run`` (plain, then the first ``run_solution`` of the answer on arrays made beforehand, to its
synchronize), ``runprof`` (that first run under cProfile, 45 entries).

    python3 bench/firstfind_probe.py [MODE,MODE,...]   (also ``stages``: the find's stages, wall ms)
"""
import cProfile, io, json, os, pstats, subprocess, sys, tempfile, time
CHILD = r'''
import sys, time, cProfile, pstats, io
import cupy
cupy.cuda.Device(0).use(); cupy.cuda.runtime.deviceSynchronize()
mode = sys.argv[1]
if mode in ("run", "runprof"):
    x = cupy.random.standard_normal((32, 64, 56, 56), dtype=cupy.float32)
    w = cupy.random.standard_normal((64, 64, 3, 3), dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
t0 = time.perf_counter()
if mode == "versions":
    from miofind.solvers import cudnn_base
    cheap = cudnn_base._versions_unimported()
    t1 = time.perf_counter()
    import cudnn
    real = {"cudnn": str(cudnn.backend_version()), "cudnn_frontend": cudnn.__version__}
    print(f"unimported read {1e3*(t1-t0):.1f} ms: {cheap}; imported: {real}; equal: {cheap == real}")
    sys.exit()
if mode == "cudnn":
    import cudnn
    t1 = time.perf_counter()
    v = cudnn.backend_version()
    t2 = time.perf_counter()
    print(f"import cudnn {1e3*(t1-t0):.1f} ms, backend_version {1e3*(t2-t1):.2f} ms ({v})")
    sys.exit()
import miofind
from miofind import find_solutions
t1 = time.perf_counter()
if mode == "stages":
    # inclusive wall ms of the find's stages (nested: each figure includes the ones it calls)
    import functools, importlib
    spent = {}
    def wrap(modname, attr, label=None):
        mod = importlib.import_module(modname)
        f = getattr(mod, attr)
        label = label or f"{modname}.{attr}"
        @functools.wraps(f)
        def w(*a, **k):
            s0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + (time.perf_counter() - s0) * 1e3
        setattr(mod, attr, w)
    for m, a in [("miofind.find", "candidates"), ("miofind.find", "db_answer"), ("miofind.find", "trusted_solutions"),
                 ("miofind.db.fastread", "overlay"), ("miofind.db.fastread", "_prefetched"), ("miofind.db.fastread", "_check"),
                 ("miofind.find", "open_dbs"), ("miofind.trust", "source_digest"), ("solvers.fft_cufft", "version"),
                 ("miofind.nvlib", "load"), ("miofind.registry", "_load")]:
        wrap(m, a)
    wrap("miofind.trust", "trust_key", "trust_key")
    t1 = time.perf_counter()
key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
if mode == "prof":
    pr = cProfile.Profile(); pr.enable()
res = find_solutions(key)
t2 = time.perf_counter()
def top(pr):
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45); print(s.getvalue())
if mode == "prof":
    top(pr)
print(f"import {1e3*(t1-t0):.1f} ms, find {1e3*(t2-t1):.1f} ms, source {res.source}, cudnn imported: {'cudnn' in sys.modules}")
if mode == "stages":
    print("  stages (inclusive ms): " + ", ".join(f"{k} {v:.1f}" for k, v in spent.items()))
if mode in ("run", "runprof"):
    from miofind import run_solution
    if mode == "runprof":
        pr = cProfile.Profile(); pr.enable()
    t3 = time.perf_counter()
    run_solution(res[0], x, w)
    cupy.cuda.runtime.deviceSynchronize()
    t4 = time.perf_counter()
    if mode == "runprof":
        top(pr)
    print(f"  first run {1e3*(t4-t3):.1f} ms ({res[0].solver_id})")
'''
env = dict(os.environ)
tmp = tempfile.mkdtemp()
env["MIOFIND_DB"] = os.path.join(tmp, "u.sqlite")
subprocess.run([sys.executable, "-c", "from miofind.db import FindDB; FindDB().close()"], env=env, check=True)
modes = sys.argv[1].split(",") if len(sys.argv) > 1 else ["versions", "versions", "plain", "plain", "cudnn", "plain", "plain", "prof"]
for mode in modes:
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD, mode] if mode == "x" else [sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True)
    print(f"== {mode}\n{r.stdout}{r.stderr[-3000:]}", flush=True)
