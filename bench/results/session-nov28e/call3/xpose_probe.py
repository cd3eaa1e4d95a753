"""The copies' cost: the NCHW wrappers' transposes on ResNet-50's N=32 FP16 activations, both ways, timed with CUDA
events (median of 50 after 5 warm-ups), as bytes moved (read + write) per second, beside a plain device-to-device
copy of the same bytes. Call 2 timed implicit_gemm_xpose.cu's element-wise igemm_xpose (32 x 32 tiles); with
``--both`` (call 3) the 16-byte-vector igemm_hopper_nchw_xpose (64 x 64 tiles) too."""
import sys

import cupy
import numpy as np

from miofind.compile import compile_kernel
from miofind.solver import KernelInfo, ceil_div


def med_ms(fn, it=50):
    for _ in range(5):
        fn()
    ev = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(it)]
    for a, b in ev:
        a.record(); fn(); b.record()
    ev[-1][1].synchronize()
    return float(np.median([cupy.cuda.get_elapsed_time(a, b) for a, b in ev]))


KERNELS = [("igemm_xpose", "implicit_gemm_xpose.cu", 32)]
if "--both" in sys.argv:
    KERNELS.append(("igemm_hopper_nchw_xpose", "implicit_gemm_hopper_nchw.cu", 64))
for c, hw in ((64, 56 * 56), (256, 56 * 56), (128, 28 * 28), (512, 28 * 28), (256, 14 * 14), (512, 7 * 7)):
    src = cupy.random.standard_normal((32, c, hw), dtype=np.float32).astype(np.float16)
    dst = cupy.empty_like(src)
    nbytes = 2 * src.nbytes
    out = [f"C={c:4d} HW={hw:5d} {src.nbytes / 1e6:6.1f} MB:"]
    for name, source, tile in KERNELS:
        for label, (r, s) in (("NCHW->NHWC", (c, hw)), ("NHWC->NCHW", (hw, c))):
            ki = KernelInfo(source, name, (ceil_div(s, tile), ceil_div(r, tile), 32), (256, 1, 1),
                            macros=(("DATA_T", "__half"),))
            k = compile_kernel(ki)
            ms = med_ms(lambda: k(ki.grid, ki.block, (src, dst, np.int32(r), np.int32(s))))
            out.append(f"{name} {label} {ms * 1e3:7.1f} us {nbytes / ms / 1e9:5.2f} TB/s")
    ms = med_ms(lambda: cupy.copyto(dst, src))
    out.append(f"copy {ms * 1e3:7.1f} us {nbytes / ms / 1e9:5.2f} TB/s")
    print("  ".join(out), flush=True)
