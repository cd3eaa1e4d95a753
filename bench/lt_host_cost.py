"""The host time of one cublasLtMatmul call against one kernel launch, both through ``miofind._native``'s packed
callers with nothing else between calls: the floor under an im2col-GEMM or Winograd solution's extra library
call (issue 14's "each additional call <= 6 us"). Median over bursts of 100 calls, the queue drained between
bursts, both callers interleaved burst by burst; FP32 and TF32 GEMMs of a tiny and of ResNet-50-like shapes.

    python bench/lt_host_cost.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# (m, n, k) column-major, A m x k, B k x n: the tiny problem's GEMM and im2col GEMMs of ResNet-50 layers at N=1
SHAPES = {"tiny 8x64x72": (8, 64, 72), "r50 64x3136x576": (3136, 64, 576), "r50 256x196x2304": (196, 256, 2304)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--bursts", type=int, default=60)
    a = ap.parse_args(argv)
    import cupy

    from bench_overhead import host_us

    from miofind import cublas
    from miofind.launch import PTR, Launch, native

    if native() is None:
        sys.exit("miofind._native is not built: this measures its packed callers")
    sync = cupy.cuda.runtime.deviceSynchronize
    kern = cupy.RawKernel(r'extern "C" __global__ void k(float* a, float* b, float* c, float* d) {}', "k")
    bufs = [cupy.zeros(4 << 20, cupy.float32) for _ in range(3)]
    pa, pb, pc = (int(b.data.ptr) for b in bufs)
    stream = 0
    launch = Launch(kern, (1, 1, 1), (32, 1, 1), (PTR,) * 4)
    launch_fast = launch._bind()
    rows = []
    for name, (m, n, k) in SHAPES.items():
        for compute, label in ((cublas.COMPUTE_32F, "FP32"), (cublas.COMPUTE_32F_FAST_TF32, "TF32")):
            g = cublas.LtGemm(cublas.OP["N"], cublas.OP["N"], m, n, k, cublas.R_32F, m, 0, k, 0, cublas.R_32F, m, 0, 1,
                              compute, 0, False)
            g.call(stream, pa, pb, pc)
            blk = g._args[stream]
            lt_fast = blk[5]
            fns = {"cublasLtMatmul (packed C caller)": lambda: lt_fast(pa, pb, pc, pc),
                   "LtGemm.call (its Python)": lambda: g.call(stream, pa, pb, pc),
                   "kernel launch (packed C launcher)": lambda: launch_fast(stream, pa, pb, pc, pc)}
            row = {"gemm": name, "math": label, **host_us(fns, a.bursts * 100, sync, burst=100, warmup=300)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
