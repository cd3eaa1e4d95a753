"""Prepared (NOT RUN: session nov27i's device time was spent). With prepared/wrw_cf.patch applied: the float64
reference's channels-first backward weights, reference_conv_wrw_cf (naive_conv_wrw's blocks, each thread walking its
output pixels by carries instead of divisions) against naive_conv_wrw on the same inputs and launch grid, GPU ms by
CUDA events (median of 5 after one warm-up run), outputs compared; on bench_cold's five shapes in FP32 NCHW and
ResNet-50's layers at N=32 NCHW. Each problem's FLOPs over the new kernel's time: the channels-first W rate
harness.NAIVE_REFERENCE_FLOPS["W"] (0.45e12 today) would take."""
import dataclasses
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


problems = [(f"{s} fp32", bench_cold.problem(s, "fp32", "W")) for s in bench_cold.SHAPES]
for c, k, hw, f, st in ((64, 64, 56, 3, 1), (256, 256, 14, 3, 1), (128, 128, 56, 3, 2), (256, 64, 56, 1, 1),
                        (1024, 256, 14, 1, 1), (512, 512, 7, 3, 1)):
    problems.append((f"r50 {c}->{k}@{hw} {f}x{f}/{st} N=32", ProblemDescription.make(
        "W", n=32, c=c, k=k, in_size=(hw, hw), filter_size=f, pads=f // 2, strides=st)))
print("| problem | naive_conv_wrw ms | reference_conv_wrw_cf ms | new / old | max rel. diff | estimate ms (today) | "
      "GFLOP/s new |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
rng = cupy.random.default_rng(0)
for label, p in problems:
    conv = p.as_conv()
    new = solver.get_solution(conv, None, reference=True)
    assert new.kernels[0].name == "reference_conv_wrw_cf", new.kernels[0].name
    # the same launch grid (a block per dw element) for both
    old = dataclasses.replace(new, kernels=[dataclasses.replace(new.kernels[0], source="direct_naive.cu",
                                                                name="naive_conv_wrw")])
    a_shape, b_shape, out_shape = conv.io_shapes()
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    outs, ms = [], []
    for sol in (old, new):
        out = cupy.full(out_shape, cupy.nan)
        ms.append(timed(build_invoker(conv, sol), conv, a, b, out))
        outs.append(out)
    diff = float(cupy.abs(outs[1] - outs[0]).max() / cupy.abs(outs[0]).max())
    print(f"| {label} | {ms[0]:.2f} | {ms[1]:.2f} | {ms[1] / ms[0]:.3f} | {diff:.1e} | {naive_reference_ms(conv):.2f} | "
          f"{conv.flops() / ms[1] / 1e6:.0f} |", flush=True)
