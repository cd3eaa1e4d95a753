"""The float64 reference's backward weights: reference_conv_wrw (kernels_src/reference_wrw.cu, a block per 32 dw
elements, c fastest) against the naive solver's naive_conv_wrw (a block per element) on the same inputs, GPU ms by
CUDA events (median of 5 after one warm-up run), outputs compared (max relative difference), on bench_cold's five
shapes in FP32 NCHW and FP16 NHWC, ResNet-50's 3x3 and 1x1 layers at N=32 in both layouts, a depthwise layer and a
first layer (C=3) channels-last. Channels-first rows also time the new kernel there (not used there unless it wins).
Each problem's FLOPs over the used kernel's time: the rates harness.NAIVE_REFERENCE_*FLOPS estimate. Session nov27i,
call 6."""
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
import solvers.direct_naive_base as dnb  # noqa: E402

USED_LAYOUTS = dnb.REFERENCE_WRW_LAYOUTS

cupy.cuda.Device(0).use()
solver = get_solver("ConvDirectNaiveConvWrw")


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


problems = [(f"{s} {dt}", bench_cold.problem(s, dt, "W")) for s in bench_cold.SHAPES for dt in ("fp32", "fp16")]
for lay in ("NCHW", "NHWC"):
    for c, k, hw, f, st in ((64, 64, 56, 3, 1), (256, 256, 14, 3, 1), (128, 128, 56, 3, 2), (256, 64, 56, 1, 1),
                            (1024, 256, 14, 1, 1)):
        problems.append((f"r50 {c}->{k}@{hw} {f}x{f}/{st} N=32 {lay}", ProblemDescription.make(
            "W", n=32, c=c, k=k, in_size=(hw, hw), filter_size=f, pads=f // 2, strides=st, layout=lay)))
problems.append(("depthwise 192@56 3x3 N=32 NHWC", ProblemDescription.make(
    "W", n=32, c=192, k=192, in_size=(56, 56), filter_size=3, pads=1, groups=192, layout="NHWC")))
problems.append(("stem 3->64@224 7x7/2 N=32 NHWC", ProblemDescription.make(
    "W", n=32, c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2, layout="NHWC")))
print("| problem | naive_conv_wrw ms | reference_conv_wrw ms | new / old | max rel. diff | used | estimate ms (today) | "
      "GFLOP/s used |")
print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
rng = cupy.random.default_rng(0)
for label, p in problems:
    conv = p.as_conv()
    # each kernel with its own launch grid (the solution's invoker launches the grid get_solution chose)
    dnb.REFERENCE_WRW_LAYOUTS = ()
    old = solver.get_solution(conv, None, reference=True)
    dnb.REFERENCE_WRW_LAYOUTS = ("NCHW", "NHWC", "NCDHW", "NDHWC")
    new = solver.get_solution(conv, None, reference=True)
    dnb.REFERENCE_WRW_LAYOUTS = USED_LAYOUTS
    assert (old.kernels[0].name, new.kernels[0].name) == ("naive_conv_wrw", "reference_conv_wrw")
    a_shape, b_shape, out_shape = conv.io_shapes()
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    outs, ms = [], []
    for sol in (old, new):
        out = cupy.full(out_shape, cupy.nan)
        ms.append(timed(build_invoker(conv, sol), conv, a, b, out))
        outs.append(out)
    diff = float(cupy.abs(outs[1] - outs[0]).max() / cupy.abs(outs[0]).max())
    is_new = conv.layouts[0] in USED_LAYOUTS
    t_used = ms[1] if is_new else ms[0]
    print(f"| {label} | {ms[0]:.2f} | {ms[1]:.2f} | {ms[1] / ms[0]:.3f} | {diff:.1e} | {'new' if is_new else 'old'} | "
          f"{naive_reference_ms(conv):.2f} | {conv.flops() / t_used / 1e6:.0f} |", flush=True)
