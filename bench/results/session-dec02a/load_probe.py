"""Session dec02a: do cuDNN's first runs (CUDA's lazy module loads) of a find's plans overlap when run from two
threads? One process per measurement (module loads are per process): a find of bench_cold's warm-up shape in each
direction, then the ResNet-50 128-channel 3x3 FP32 B problem's first plans built (as the find's prefetch builds them)
and their first runs timed, in one thread (``serial``) or one thread per plan on a stream each (``parallel``).
Usage: python load_probe.py serial|parallel  (prints one JSON line)"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import cupy  # noqa: E402

from bench_cold import problem  # noqa: E402
from miofind.api import find_solutions, warm_up  # noqa: E402
from miofind.solvers import cudnn_base  # noqa: E402

how = sys.argv[1]
cupy.cuda.Device(0).use()
warm_up()
for d in "FBW":
    find_solutions(problem("warmup", "fp32", d), mode="normal")
p = problem("r50_128_28_3x3_n16", "fp32", "B").as_conv()
t0 = time.perf_counter()
names = [n for n, _ in cudnn_base.first_plans(p, 2)]
t1 = time.perf_counter()
dev = cupy.cuda.runtime.getDevice()
if how == "serial":
    cudnn_base.first_runs(p, dev, names)
else:
    def one(name):
        cupy.cuda.runtime.setDevice(dev)
        s = cupy.cuda.Stream(non_blocking=True)
        with cudnn_base._LOCK:
            g = cudnn_base._graphs.get((dev, p))
            pl = next(x for x in g.plans if x.name == name)
            nr = pl.native.run(s.ptr)
        with s:
            sizes = [4 * n for n in (16 * 128 * 28 * 28, 128 * 128 * 9, 16 * 128 * 28 * 28)]
            a, b, out = (cupy.empty(n, dtype=cupy.uint8) for n in sizes)
            work = cupy.empty(pl.workspace, dtype=cupy.uint8) if pl.workspace else None
            nr(a.data.ptr, b.data.ptr, out.data.ptr, work.data.ptr if work is not None else 0)
        s.synchronize()
    ts = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
t2 = time.perf_counter()
print(json.dumps({"how": how, "plans": names, "build_ms": (t1 - t0) * 1e3, "first_runs_ms": (t2 - t1) * 1e3}))
