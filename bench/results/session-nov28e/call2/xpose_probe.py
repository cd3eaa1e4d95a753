"""The copies' cost: implicit_gemm_xpose.cu's igemm_xpose (the NCHW wrappers' transposes) on ResNet-50's N=32 FP16
activations, both ways, timed with CUDA events (median of 50 after 5 warm-ups), as bytes moved (read + write) per
second; beside a plain device-to-device copy of the same bytes."""
import sys

import cupy
import numpy as np

from miofind.compile import compile_kernel
from miofind.solvers.implicit_gemm_hopper_nchw import Copy


def med_ms(fn, it=50):
    for _ in range(5):
        fn()
    ev = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(it)]
    for a, b in ev:
        a.record(); fn(); b.record()
    ev[-1][1].synchronize()
    return float(np.median([cupy.cuda.get_elapsed_time(a, b) for a, b in ev]))


for c, hw in ((64, 56 * 56), (256, 56 * 56), (128, 28 * 28), (512, 28 * 28), (256, 14 * 14), (512, 7 * 7)):
    src = cupy.random.standard_normal((32, c, hw), dtype=np.float32).astype(np.float16)
    dst = cupy.empty_like(src)
    nbytes = 2 * src.nbytes
    out = [f"C={c:4d} HW={hw:5d} {src.nbytes / 1e6:6.1f} MB:"]
    for label, (r, s) in (("NCHW->NHWC", (c, hw)), ("NHWC->NCHW", (hw, c))):
        ki = Copy(0, 32, r, s, 0).kernel("FP16")
        k = compile_kernel(ki)
        f = lambda: k(ki.grid, ki.block, (src, dst, np.int32(r), np.int32(s)))
        ms = med_ms(f)
        out.append(f"{label} {ms * 1e3:7.1f} us {nbytes / ms / 1e9:5.2f} TB/s")
    ms = med_ms(lambda: dst.set(src) if False else cupy.copyto(dst, src))
    out.append(f"copy {ms * 1e3:7.1f} us {nbytes / ms / 1e9:5.2f} TB/s")
    print("  ".join(out), flush=True)
