"""Where the remaining host time goes, on the GPU: the parts behind bench_overhead's totals.

1. Kernel launch cost against the number of kernel arguments (3 pointers, then 3 pointers plus
   37 int64 scalars as the naive solver passes), through miofind's packed ``Launch``.
2. One cuBLAS strided-batched GEMM of the tiny problem's im2col shape: miofind's ``LtGemm`` (cuBLASLt,
   planned once), the classic ``cublasGemmStridedBatchedEx`` with ctypes arguments built once and
   with Python ints converted per call, and a ``Blas.gemm`` call as the solvers make it.
3. miofind.torch's functional conv2d against torch's, host time per call, and a cProfile of it.
4. A cold process (after CUDA is initialised) under cProfile: import, first find from the DBs,
   first run; the top functions by cumulative time, and ``-X importtime``'s slowest imports.

    python bench/bench_host_parts.py --out bench/results/host-parts
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_overhead import host_us  # noqa: E402  one timing method for both benchmarks


def per_call_us(fn, calls: int = 20000) -> float:
    """``bench_overhead.host_us`` with CuPy's device synchronize."""
    import cupy

    return host_us(fn, calls, cupy.cuda.runtime.deviceSynchronize)


SRC = r"""
extern "C" __global__ void k3(float* a, float* b, float* c) { if (threadIdx.x == 1023) c[0] = a[0] + b[0]; }
extern "C" __global__ void k40(float* a, float* b, float* c,
  long long s0, long long s1, long long s2, long long s3, long long s4, long long s5, long long s6, long long s7,
  long long s8, long long s9, long long s10, long long s11, long long s12, long long s13, long long s14, long long s15,
  long long s16, long long s17, long long s18, long long s19, long long s20, long long s21, long long s22, long long s23,
  long long s24, long long s25, long long s26, long long s27, long long s28, long long s29, long long s30, long long s31,
  long long s32, long long s33, long long s34, long long s35, long long s36)
{ if (threadIdx.x == 1023) c[0] = a[0] + b[0] + (float)(s0 + s36); }
"""


def launches() -> dict:
    import cupy
    import numpy as np

    from miofind.launch import PTR, Launch

    mod = cupy.RawModule(code=SRC)
    a = cupy.ones(4, cupy.float32)
    s = cupy.cuda.get_current_stream().ptr
    l3 = Launch(mod.get_function("k3"), (1, 1, 1), (32, 1, 1), (PTR, PTR, PTR))
    l40 = Launch(mod.get_function("k40"), (1, 1, 1), (32, 1, 1), (PTR, PTR, PTR, *[np.int64(i) for i in range(37)]))
    p = a.data.ptr
    r = {"launch_3_args_us": per_call_us(lambda: l3(s, p, p, p)),
         "launch_40_args_us": per_call_us(lambda: l40(s, p, p, p))}
    cupy.cuda.runtime.deviceSynchronize()
    return r


def gemm() -> dict:
    import ctypes

    import cupy
    import numpy as np

    from miofind import cublas
    from solvers.gemm_base import make_blas

    m, n, k, batch = 64, 8, 72, 8          # the tiny problem's forward GEMM (P x K/G, reduction C*T)
    A = cupy.random.rand(batch * m * k, dtype=cupy.float32)
    B = cupy.random.rand(k * n, dtype=cupy.float32)
    C = cupy.empty(batch * m * n, dtype=cupy.float32)
    s = cupy.cuda.get_current_stream().ptr
    lib = cublas.library()
    h = cublas.handle(s, cublas.DEFAULT_MATH)
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    fn = lib.cublasGemmStridedBatchedEx
    vp, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    pre = (vp(h), i(0), i(0), i(m), i(n), i(k), vp(one.ctypes.data), vp(A.data.ptr), i(0), i(m), ll(m * k),
           vp(B.data.ptr), i(0), i(k), ll(0), vp(zero.ctypes.data), vp(C.data.ptr), i(0), i(m), ll(m * n),
           i(batch), i(cublas.COMPUTE_32F), i(-1))
    ints = (h, 0, 0, m, n, k, one.ctypes.data, A.data.ptr, 0, m, m * k, B.data.ptr, 0, k, 0, zero.ctypes.data,
            C.data.ptr, 0, m, m * n, batch, cublas.COMPUTE_32F, -1)
    blas = make_blas("FP32", "default")

    def via_blas():
        with blas.session(s):
            blas.gemm("N", "N", m, n, k, A.data.ptr, m, m * k, B.data.ptr, k, 0, C.data.ptr, m, m * n, batch=batch)

    lt = cublas.LtGemm(0, 0, m, n, k, cublas.R_32F, m, m * k, k, 0, cublas.R_32F, m, m * n, batch,
                       cublas.COMPUTE_32F, 0, False)
    a_, b_, c_ = A.data.ptr, B.data.ptr, C.data.ptr
    lt.call(s, a_, b_, c_)
    C2 = C.copy()
    fn(*pre)
    lt_matches = bool(cupy.allclose(C, C2, rtol=1e-5, atol=1e-5))
    r = {"lt_gemm_call_us": per_call_us(lambda: lt.call(s, a_, b_, c_)), "lt_matches_classic": lt_matches,
         "classic_prebuilt_ctypes_us": per_call_us(lambda: fn(*pre)),
         "classic_python_ints_us": per_call_us(lambda: fn(*ints)),
         "blas_gemm_us": per_call_us(via_blas),
         "cublas_handle_bind_us": per_call_us(lambda: cublas.handle(s, cublas.DEFAULT_MATH))}
    cupy.cuda.runtime.deviceSynchronize()
    return r


def torch_path(out: str) -> dict:
    """Host time per call of miofind.torch's functional conv2d against torch's (cuDNN), on a tiny layer,
    with and without autograd, FP32 NCHW and FP16 channels_last; then a cProfile of the no-grad call."""
    import cProfile
    import io
    import pstats

    import torch

    import miofind.torch as mt

    sync = torch.cuda.synchronize
    r = {}
    for tag, dt, fmt in (("fp32", torch.float32, torch.contiguous_format), ("fp16_cl", torch.float16, torch.channels_last)):
        x = torch.randn(1, 64, 14, 14, device="cuda", dtype=dt).contiguous(memory_format=fmt)
        w = torch.randn(64, 64, 3, 3, device="cuda", dtype=dt).contiguous(memory_format=fmt)
        mt.conv2d(x, w, padding=1)
        sync()
        with torch.no_grad():
            r[f"{tag}_torch_conv2d_nograd_us"] = host_us(lambda: torch.nn.functional.conv2d(x, w, padding=1), 5000, sync)
            r[f"{tag}_miofind_conv2d_nograd_us"] = host_us(lambda: mt.conv2d(x, w, padding=1), 5000, sync)
        wg = w.clone().requires_grad_(True)
        r[f"{tag}_torch_conv2d_grad_us"] = host_us(lambda: torch.nn.functional.conv2d(x, wg, padding=1), 5000, sync)
        r[f"{tag}_miofind_conv2d_grad_us"] = host_us(lambda: mt.conv2d(x, wg, padding=1), 5000, sync)
        if tag == "fp32":
            pr = cProfile.Profile()
            with torch.no_grad():
                pr.enable()
                for _ in range(2000):
                    mt.conv2d(x, w, padding=1)
                pr.disable()
            sync()
            buf = io.StringIO()
            pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(30)
            with open(os.path.join(out, "torch_path_profile.txt"), "w") as f:
                f.write(buf.getvalue())
    return r


COLD = r'''
import cProfile, io, pstats, sys, time
import torch
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
pr = cProfile.Profile(); pr.enable()
t0 = time.perf_counter()
import miofind
from miofind import find_solutions
t1 = time.perf_counter()
res = find_solutions(sys.argv[1], mode="fast")
t2 = time.perf_counter()
sol = res[0]; p = sol.problem
x = torch.randn(p.io_shapes()[0], device="cuda"); w = torch.randn(p.io_shapes()[1], device="cuda")
y = torch.empty(p.io_shapes()[2], device="cuda"); torch.cuda.synchronize()
t3 = time.perf_counter()
miofind.run_solution(sol, x, w, y); torch.cuda.synchronize()
t4 = time.perf_counter()
pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(60)
print(f"import {1e3*(t1-t0):.1f} ms, first find {1e3*(t2-t1):.1f} ms, first run {1e3*(t4-t3):.1f} ms "
      f"(profiled: cProfile inflates these)")
print(s.getvalue())
'''


def cold(out: str) -> dict:
    key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
    env = dict(os.environ)
    subprocess.run([sys.executable, "-c", COLD, key], capture_output=True, text=True, env=env)   # fills caches
    r = subprocess.run([sys.executable, "-c", COLD, key], capture_output=True, text=True, env=env)
    with open(os.path.join(out, "cold_profile.txt"), "w") as f:
        f.write(r.stdout + r.stderr[-4000:])
    it = subprocess.run([sys.executable, "-X", "importtime", "-c",
                         "import torch; torch.zeros(1, device='cuda'); import miofind; from miofind import find_solutions;"
                         f" find_solutions('{key}', mode='fast')"], capture_output=True, text=True, env=env)
    rows = []
    for line in it.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = [x.strip() for x in line[len("import time:"):].split("|")]
            if parts[0].isdigit():
                rows.append((int(parts[1]), parts[2]))
    rows.sort(reverse=True)
    with open(os.path.join(out, "cold_importtime.txt"), "w") as f:
        f.write("\n".join(f"{us / 1e3:9.1f} ms  {name}" for us, name in rows[:80]))
    return {"cold_profile_head": r.stdout.splitlines()[:1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="launch,gemm,torch,cold")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from miofind import cublas
    cublas.settle()         # steady-state calls: none of them on the bridge GEMM (cuBLASLt set up first)
    res = {}
    parts = a.parts.split(",")
    for name, fn in (("launch", launches), ("gemm", gemm), ("torch", lambda: torch_path(a.out))):
        if name not in parts:
            continue
        try:
            res.update(fn())
        except Exception as e:      # noqa: BLE001  a part that fails is reported, not fatal
            res[f"{name}_error"] = f"{type(e).__name__}: {e}"
    if "cold" in parts:
        res.update(cold(a.out))
    with open(os.path.join(a.out, "host_parts.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
