"""The float64 reference's own forward and backward-data kernels (reference_fwd.cu, reference_bwd.cu) against the
naive solvers' (naive_conv_fwd, naive_conv_bwd), GPU ms by CUDA events (median of 5 after one warm-up run) on
bench_cold's five shapes in FP32 NCHW and FP16 NHWC and on ResNet-50's 3x3 layers at N=32 in both layouts, with both
outputs compared (max relative difference); and each problem's FLOPs over the new kernel's time (the rates
``harness.NAIVE_REFERENCE_FLOPS`` estimates). Session nov27i, call 1 (prepared as session nov27h call 11; call 7 of nov27h had ref_bwd.py for B alone)."""
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
SOLVERS = {"F": (get_solver("ConvDirectNaiveConvFwd"), "naive_conv_fwd"),
           "B": (get_solver("ConvDirectNaiveConvBwd"), "naive_conv_bwd")}


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


problems = [(f"{s} {dt} {d}", bench_cold.problem(s, dt, d)) for d in "FB" for s in bench_cold.SHAPES
            for dt in ("fp32", "fp16")]
for d in "FB":
    for lay in ("NCHW", "NHWC"):
        for c, hw, st in ((64, 56, 1), (256, 14, 1), (128, 56, 2), (512, 14, 2)):
            problems.append((f"r50 {c}@{hw} 3x3/{st} N=32 {lay} {d}", ProblemDescription.make(
                d, n=32, c=c, k=c, in_size=(hw, hw), filter_size=3, pads=1, strides=st, layout=lay)))
print("| problem | naive solver's kernel ms | reference kernel ms | new / old | max rel. diff | estimate ms (today) | "
      "GFLOP/s new |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
rng = cupy.random.default_rng(0)
for label, p in problems:
    conv = p.as_conv()
    solver, old_name = SOLVERS[conv.direction]
    new = solver.get_solution(conv, None, reference=True)
    old = dataclasses.replace(new, kernels=[dataclasses.replace(new.kernels[0], source="direct_naive.cu",
                                                                name=old_name)])
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
