"""Where a fresh process's first FP16 GEMM candidate loses 100-200 ms in a find (session nov28g call 3: GemmFwdRest's
verification run took 191 ms in bench_cold's fresh-install find of 256 @28 3x3/2 FP16 F). In a fresh process: cuBLASLt's
set-up (miofind.cublas.settle, an FP32 heuristic query), then an FP16 GEMM's first heuristic query, first call and
second call, then the same for BF16 and FP32-TF32; each step's wall ms. Usage: python lt_probe.py [fp16-first]"""
import sys
import time

import cupy

from miofind import cublas

cupy.cuda.runtime.free(cupy.cuda.runtime.malloc(1))     # the context


def ms(t):
    return (time.perf_counter() - t) * 1e3


order = ["fp16", "bf16", "tf32"]
if "fp16-first" not in sys.argv:
    t = time.perf_counter()
    cublas.settle()
    print(f"settle (FP32 set-up query): {ms(t):.1f} ms")
types = {"fp16": (cublas.R_16F, cupy.float16, cublas.COMPUTE_32F), "bf16": (cublas.R_16BF, cupy.float16, cublas.COMPUTE_32F),
         "tf32": (cublas.R_32F, cupy.float32, cublas.COMPUTE_32F_FAST_TF32)}
s = cupy.cuda.get_current_stream()
for name in order:
    rt, dt, comp = types[name]
    m = n = k = 2048
    a, b, c = (cupy.ones((m, m), dt) for _ in range(3))
    t = time.perf_counter()
    g = cublas.LtGemm(0, 0, m, n, k, rt, m, 0, k, 0, rt, m, 0, 1, comp, 0, False)
    print(f"{name}: LtGemm made {ms(t):.1f} ms", end="; ")
    t = time.perf_counter()
    g._plans[(256, 256, 256)] = g._plan((256, 256, 256))
    print(f"heuristic query {ms(t):.1f} ms", end="; ")
    for i in range(3):
        t = time.perf_counter()
        g.call(s.ptr, a.data.ptr, b.data.ptr, c.data.ptr)
        s.synchronize()
        print(f"call {i + 1} {ms(t):.2f} ms", end="; ")
    print()
