"""Does loading a module wait for GPU work in flight? (session nov27h, call 5)

Calls 3 and 4 saw a warm find's candidate preparation (module loads of generic builds, in threads) take longer
when the find's harness queued its inputs and float64 reference sooner. Here: host ms of `cuModuleLoadData` (CuPy's
Module.load) of two generic cubins, and of a 4-byte copy to a module global on a non-blocking stream with its
synchronisation (generic._write_global), with the GPU idle and while the timing hold kernel spins 30 ms on the
legacy default stream, on a blocking stream and on a non-blocking stream; the first function lookup too."""
import os
import statistics
import time

import numpy as np

os.environ.setdefault("MIOFIND_KERNEL_CACHE", "/tmp/kc-ml")

import cupy  # noqa: E402
from cupy.cuda import function  # noqa: E402

from miofind import generic  # noqa: E402
from miofind.compile import compile_kernel, cubin_for  # noqa: E402
from miofind.harness import hold_kernel_info  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import solvers  # noqa: E402

cupy.cuda.Device(0).use()
p = ProblemDescription.make("F", n=16, c=128, k=128, in_size=(28, 28), filter_size=3, pads=1, layout="NCHW")
by_id = {s.id: s for s in solvers()}
kinfos = []
for sid in ("ConvImplicitGemmFwd", "ConvWinograd3x3F43Fwd"):
    s = by_id[sid]
    cfg = next(iter(s.find_configs(p)), None)
    gks = generic.generic_kernels(s.get_solution(p, cfg))
    kinfos += [(sid, g.kinfo, g.kinfo.name) for g in gks if g is not None][:1]
cubins = [(sid, cubin_for(k), name) for sid, k, name in kinfos]
hold = compile_kernel(hold_kernel_info())
rt = cupy.cuda.runtime
streams = {"null (legacy default)": None, "blocking stream": cupy.cuda.Stream(non_blocking=False),
           "non-blocking stream": cupy.cuda.Stream(non_blocking=True)}
copy_stream = rt.streamCreateWithFlags(rt.streamNonBlocking)
value = np.zeros(1, dtype=np.int32)


def one(sid, cubin, name, busy):
    cupy.cuda.Device().synchronize()
    if busy is not None:
        s = streams[busy]
        with (s if s is not None else cupy.cuda.Stream.null):
            hold((1,), (1,), (np.uint64(30_000_000),))
    t0 = time.perf_counter()
    mod = function.Module()
    mod.load(cubin)
    t1 = time.perf_counter()
    mod.get_function(name)
    t2 = time.perf_counter()
    try:
        ptr = mod.get_global_var("miofind_gp")
    except Exception:   # noqa: BLE001 - a build without the parameter block
        ptr = None
    if ptr is not None:
        ptr = ptr if isinstance(ptr, int) else ptr.ptr
        rt.memcpyAsync(ptr, value.ctypes.data, 4, rt.memcpyHostToDevice, copy_stream)
        rt.streamSynchronize(copy_stream)
    t3 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3


for sid, cubin, name in cubins:
    one(sid, cubin, name, None)      # first load of the cubin in the process, not counted
    print(f"{sid} ({len(cubin) / 1024:.0f} KiB cubin):")
    for busy in (None, *streams):
        runs = [one(sid, cubin, name, busy) for _ in range(7)]
        med = [statistics.median(r[i] for r in runs) for i in range(3)]
        print(f"  GPU {'idle' if busy is None else 'busy 30 ms on the ' + busy:42s} load {med[0]:7.2f} ms, "
              f"get_function {med[1]:6.2f} ms, global write + sync {med[2]:6.2f} ms (medians of 7)", flush=True)

for busy in (None, "null (legacy default)"):
    for label, fn in (("cupy default_rng(seed).uniform 1M float32",
                       lambda: cupy.random.default_rng(3).uniform(-1, 1, size=(1 << 20,), dtype=cupy.float32)),):
        fn()
        ts = []
        for _ in range(5):
            cupy.cuda.Device().synchronize()
            if busy is not None:
                hold((1,), (1,), (np.uint64(30_000_000),))
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
            cupy.cuda.Device().synchronize()
        print(f"{label}, GPU {'idle' if busy is None else 'busy on the ' + busy}: host {statistics.median(ts):.2f} ms")
