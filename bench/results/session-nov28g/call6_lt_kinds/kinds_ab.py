"""A fresh process's find of ResNet-50's 256 @28 3x3/2 FP16 F (bench_cold's row that took 517 ms on a fresh install,
session-nov28g/call3_cold) with GemmFwdRest and cuDNN, mode benchmark, nothing stored: the GEMM candidate's
verification ms and the find's ms, with the problem's GEMM kinds queried ahead (``cublas.gemm_kinds``, as finds now
do) or not ("without": gemm_kinds made to return nothing). Usage: python kinds_ab.py with|without"""
import sys
import time

t_start = time.perf_counter()
import miofind  # noqa: E402
from miofind import cublas  # noqa: E402

if sys.argv[1] == "without":
    cublas.gemm_kinds = lambda dtype, math: ()
p = miofind.ProblemDescription.make("F", n=16, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, strides=2,
                                    dtype="FP16", layout="NCHW")
t0 = time.perf_counter()
r = miofind.find_solutions(p, solvers=["GemmFwdRest", "ConvCudnnFwd"], store=False, mode="benchmark")
find_ms = (time.perf_counter() - t0) * 1e3
gemm = [c for c in r.timing["candidates"] if c["solver_id"] == "GemmFwdRest"]
print(f"{sys.argv[1]}: find {find_ms:.1f} ms; GemmFwdRest verify {gemm[0]['verify_ms']:.1f} ms, compile "
      f"{gemm[0]['compile_ms']:.1f} ms; order {[c['solver_id'] for c in r.timing['candidates']]}; "
      f"best {r[0].solver_id} {r[0].time_ms:.4f} ms")
