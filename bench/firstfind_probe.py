"""Where the first find's time goes in a new process, on the GPU (issue 14): new processes with CUDA up,
each printing one line: ``versions`` (cuDNN's versions read without importing the frontend, against
the imported frontend's), ``cudnn`` (the frontend's import alone), ``plain`` (import miofind, then
``find_solutions`` of one shipped-DB problem), ``prof`` (the same under cProfile, 45 entries).

    python3 bench/firstfind_probe.py
"""
import cProfile, io, json, os, pstats, subprocess, sys, tempfile, time
CHILD = r'''
import sys, time, cProfile, pstats, io
import cupy
cupy.cuda.Device(0).use(); cupy.cuda.runtime.deviceSynchronize()
mode = sys.argv[1]
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
key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
if mode == "prof":
    pr = cProfile.Profile(); pr.enable()
res = find_solutions(key)
t2 = time.perf_counter()
if mode == "prof":
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45); print(s.getvalue())
print(f"import {1e3*(t1-t0):.1f} ms, find {1e3*(t2-t1):.1f} ms, source {res.source}, cudnn imported: {'cudnn' in sys.modules}")
'''
env = dict(os.environ)
tmp = tempfile.mkdtemp()
env["MIOFIND_DB"] = os.path.join(tmp, "u.sqlite")
subprocess.run([sys.executable, "-c", "from miofind.db import FindDB; FindDB().close()"], env=env, check=True)
for mode in ["versions", "versions", "plain", "plain", "cudnn", "plain", "plain", "prof"]:
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD, mode] if mode == "x" else [sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True)
    print(f"== {mode}\n{r.stdout}{r.stderr[-3000:]}", flush=True)
