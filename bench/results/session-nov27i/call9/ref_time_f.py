"""The float64 reference's channels-last forward: reference_conv_fwd_warp (a warp per y element, its lanes splitting
the channels) against reference_conv_fwd (a thread per y element), each with its own launch grid, on the same inputs:
GPU ms by CUDA events (median of 5 after one warm-up run), outputs compared (max relative difference), on
bench_cold's five shapes in FP16 NHWC, ResNet-50's layers at N=32 NHWC, and narrower groups (16, 8 and 3 channels,
depthwise) to place the threshold REFERENCE_FWD_WARP_CPG. Each problem's FLOPs over the used kernel's time: the rate
harness.NAIVE_REFERENCE_CHANNELS_LAST_FLOPS["F"] estimates. Session nov27i, call 9."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "bench"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

import cupy  # noqa: E402

import bench_cold  # noqa: E402
from miofind.harness import naive_reference_ms  # noqa: E402
from miofind.invokers import build_invoker, call  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

cupy.cuda.Device(0).use()
solver = get_solver("ConvDirectNaiveConvFwd")
# the module the solver was built from (miofind maps solvers/ as miofind.solvers)
dnb = sys.modules[type(solver).get_solution.__module__]
USED_CPG = dnb.REFERENCE_FWD_WARP_CPG


def timed(inv, p, a, b, out):
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    call(inv, p, a, b, out, None)
    ts = []
    for _ in range(5):
        start.record()
        call(inv, p, a, b, out, None)
        stop.record()
        stop.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(ts)


problems = [(f"{s} fp16", bench_cold.problem(s, "fp16", "F")) for s in bench_cold.SHAPES]
for c, k, hw, f, st in ((64, 64, 56, 3, 1), (256, 256, 14, 3, 1), (128, 128, 56, 3, 2), (512, 512, 14, 3, 2),
                        (256, 64, 56, 1, 1), (1024, 256, 14, 1, 1), (64, 256, 56, 1, 1)):
    problems.append((f"r50 {c}->{k}@{hw} {f}x{f}/{st} N=32", ProblemDescription.make(
        "F", n=32, c=c, k=k, in_size=(hw, hw), filter_size=f, pads=f // 2, strides=st, layout="NHWC")))
for c, g in ((32, 2), (64, 8), (96, 32)):
    problems.append((f"{c // g} channels a group ({c}, g={g}) @28 3x3 N=32", ProblemDescription.make(
        "F", n=32, c=c, k=c, in_size=(28, 28), filter_size=3, pads=1, groups=g, layout="NHWC")))
problems.append(("stem 3->64@224 7x7/2 N=32", ProblemDescription.make(
    "F", n=32, c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2, layout="NHWC")))
print("| problem | channels a group | thread per output ms | warp per output ms | warp / thread | max rel. diff | used | "
      "estimate ms (today) | GFLOP/s used |")
print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
rng = cupy.random.default_rng(0)
for label, p in problems:
    conv = p.as_conv()
    dnb.REFERENCE_FWD_WARP_CPG = 1 << 40
    thread = solver.get_solution(conv, None, reference=True)
    dnb.REFERENCE_FWD_WARP_CPG = 1
    warp = solver.get_solution(conv, None, reference=True)
    dnb.REFERENCE_FWD_WARP_CPG = USED_CPG
    assert (thread.kernels[0].name, warp.kernels[0].name) == ("reference_conv_fwd", "reference_conv_fwd_warp")
    a_shape, b_shape, out_shape = conv.io_shapes()
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    outs, ms = [], []
    for sol in (thread, warp):
        out = cupy.full(out_shape, cupy.nan)
        ms.append(timed(build_invoker(conv, sol), conv, a, b, out))
        outs.append(out)
    diff = float(cupy.abs(outs[1] - outs[0]).max() / cupy.abs(outs[0]).max())
    cpg = conv.c // conv.groups
    is_warp = cpg >= USED_CPG
    t_used = ms[1] if is_warp else ms[0]
    print(f"| {label} | {cpg} | {ms[0]:.2f} | {ms[1]:.2f} | {ms[1] / ms[0]:.3f} | {diff:.1e} | "
          f"{'warp' if is_warp else 'thread'} | {naive_reference_ms(conv):.2f} | {conv.flops() / t_used / 1e6:.0f} |",
          flush=True)
