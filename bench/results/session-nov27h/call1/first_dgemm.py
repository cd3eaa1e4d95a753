"""The first float64 GEMM of a process, timed (session nov27h, call 1): cuBLAS's set-up and its DGEMM's first
launch, then the GEMM reference of bench_cold's stride-2 3x3 B FP32 row (the first GEMM reference of its find
process) queued as a find's harness queues it, in a fresh process and again."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))

import cupy  # noqa: E402

cupy.cuda.Device(0).use()
cupy.cuda.runtime.getDeviceCount()
a = cupy.ones((64, 64), dtype=cupy.float64)
cupy.cuda.Device().synchronize()


def timed(label, fn):
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    print(f"{label}: host {1e3 * (t1 - t0):.2f} ms, with sync {1e3 * (time.perf_counter() - t0):.2f} ms", flush=True)


timed("first float32 add (no cuBLAS)", lambda: a + a)
timed("first float64 matmul (cuBLAS handle, DGEMM)", lambda: a @ a)
timed("second float64 matmul", lambda: a @ a)

import bench_cold  # noqa: E402
from miofind.harness import Harness, reference_invoker_for_kind  # noqa: E402

for shape in ("r50_256_28_3x3s2_n16", "r50_128_28_3x3_n16"):
    for d in "BF":
        p = bench_cold.problem(shape, "fp32", d)
        for kind in ("gemm", "naive"):
            t0 = time.perf_counter()
            ref = reference_invoker_for_kind(p, kind)
            t1 = time.perf_counter()
            h = Harness(p, verify=True, reference_invoker=ref, wait=False)
            t2 = time.perf_counter()
            h.ready()
            print(f"{shape} fp32 {d} {kind} reference: compile {1e3 * (t1 - t0):.1f} ms, queue {1e3 * (t2 - t1):.1f} ms, "
                  f"GPU {h.reference_ms:.1f} ms, waited {h.reference_wait_ms:.1f} ms", flush=True)
            del h
