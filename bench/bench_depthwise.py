"""Depthwise direct kernels against cuDNN, on the GPU.

Default: the forward pass of depthwise 3x3 C=256 @56x56 N=32 pad 1, NCHW, FP32 and FP16: our
kernel (ConvDepthwiseFwd, default configuration) against cuDNN through
torch.nn.functional.conv2d (cudnn.benchmark=True, TF32 off). CUDA events, median of 50 runs
after warm-ups; achieved bandwidth counts reading x once and writing y once (plus the weights);
the ratio is cuDNN's time over ours. Each run is checked against cuDNN's output first.

    python bench/bench_depthwise.py                                   # the default pair
    python bench/bench_depthwise.py --dirs FBW --layouts NCHW,NHWC --dtypes FP32,FP16,BF16
    python bench/bench_depthwise.py --tune 24       # also time the 24 best-predicted configurations
    python bench/bench_depthwise.py --shape 32,96,112,112,3,2,1       # N,C,H,W,filter,stride,pad
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

BW = 3.0e12
IDS = {"F": "ConvDepthwiseFwd", "B": "ConvDepthwiseBwd", "W": "ConvDepthwiseWrw"}


def _events_ms(fn, warmup: int, iters: int, torch) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(iters):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def _bytes(p) -> int:
    es = {"FP32": 4, "FP16": 2, "BF16": 2}[p.dtype]
    return es * sum(math.prod(s) for s in p.io_shapes())


def bench_one(p, args, torch, cupy):
    from miofind.invokers import build_invoker, call
    from miofind.registry import get_solver

    try:
        solver = get_solver(IDS[p.direction])
    except ValueError:  # not registered yet: load the class directly
        import importlib
        mod = {"F": "depthwise_fwd", "B": "depthwise_bwd", "W": "depthwise_wrw"}[p.direction]
        cls = {"F": "DepthwiseFwd", "B": "DepthwiseBwd", "W": "DepthwiseWrw"}[p.direction]
        solver = getattr(importlib.import_module(f"miofind.solvers.{mod}"), cls)()
    a = solver.applicability(p)
    if not a:
        print(f"{p.key()}: not applicable: {a.reason}")
        return None

    tdt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[p.dtype]
    cl = p.layouts[0] == "NHWC"
    fmt = torch.channels_last if cl else torch.contiguous_format
    nchw = lambda s: (s[0], s[3], s[1], s[2]) if cl else s  # noqa: E731  (memory order -> logical NCHW)
    x = torch.randn(nchw(p.x_shape), device="cuda", dtype=tdt).to(memory_format=fmt)
    w = torch.randn(nchw(p.w_shape), device="cuda", dtype=tdt).to(memory_format=fmt)
    kw = dict(stride=p.strides, padding=p.pads, dilation=p.dilations, groups=p.groups)
    y = torch.nn.functional.conv2d(x, w, **kw)
    dy = torch.randn_like(y).to(memory_format=fmt)
    ref_fn = {"F": lambda: torch.nn.functional.conv2d(x, w, **kw),
              "B": lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, **kw),
              "W": lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, **kw)}[p.direction]
    ref = ref_fn()

    def as_cupy(t):  # memory order, as miofind takes it; BF16 as raw 16-bit words
        t = t.permute(0, 2, 3, 1) if cl else t
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        return cupy.asarray(t)

    a_in, b_in = {"F": (x, w), "B": (dy, w), "W": (dy, x)}[p.direction]
    ca, cb = as_cupy(a_in), as_cupy(b_in)
    out = cupy.empty(p.io_shapes()[2], dtype=ca.dtype)
    cref = as_cupy(ref).astype(cupy.float32) if tdt != torch.bfloat16 else None

    def run_cfg(cfg):
        sol = solver.get_solution(p, cfg)
        inv = build_invoker(p, sol)
        ws = cupy.empty(sol.workspace_bytes, dtype=cupy.uint8) if sol.workspace_bytes else None
        fn = lambda: call(inv, p, ca, cb, out, ws)  # noqa: E731
        fn()
        torch.cuda.synchronize()
        err = None
        if cref is not None:
            o = out.astype(cupy.float32)
            err = float(cupy.linalg.norm(o - cref) / cupy.linalg.norm(cref))
        return _events_ms(fn, args.warmup, args.iters, torch), err, sol.config

    cud = _events_ms(ref_fn, args.warmup, args.iters, torch)
    nbytes = _bytes(p)
    ours, err, cfg = run_cfg(None)
    row = {"key": p.key(), "ours_us": ours * 1e3, "cudnn_us": cud * 1e3, "ours_GBps": nbytes / ours / 1e6,
           "cudnn_GBps": nbytes / cud / 1e6, "pct_of_3TBps": 100 * (nbytes / (ours * 1e-3)) / BW,
           "speedup_vs_cudnn": cud / ours, "rel_err_vs_cudnn": err, "config": cfg}
    print(f"{p.key():60s} ours {ours * 1e3:8.1f} us {nbytes / ours / 1e6:7.0f} GB/s "
          f"({row['pct_of_3TBps']:4.1f}% of 3 TB/s) | cuDNN {cud * 1e3:8.1f} us {nbytes / cud / 1e6:7.0f} GB/s | "
          f"cuDNN/ours {cud / ours:5.2f}x | err {err if err is None else f'{err:.2e}'} | {cfg}", flush=True)
    if args.tune:
        tuned = []
        for cfg in list(solver.config_space(p))[: args.tune]:
            try:
                t, e, _ = run_cfg(cfg)
            except Exception as ex:  # a configuration that fails to build or run is reported, not fatal
                print(f"    {cfg}: failed: {ex}")
                continue
            tuned.append((t, cfg))
            es = "-" if e is None else f"{e:.1e}"
            print(f"    {t * 1e3:8.1f} us {nbytes / t / 1e6:7.0f} GB/s err {es} {cfg}", flush=True)
        if tuned:
            t, cfg = min(tuned, key=lambda r: r[0])
            row["best_tuned_us"], row["best_tuned_config"] = t * 1e3, cfg
            print(f"    best: {t * 1e3:.1f} us {nbytes / t / 1e6:.0f} GB/s ({cud / t:.2f}x cuDNN) {cfg}")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="32,256,56,56,3,1,1", help="N,C,H,W,filter,stride,pad[,multiplier]")
    ap.add_argument("--dirs", default="F")
    ap.add_argument("--layouts", default="NCHW")
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--tune", type=int, default=0, help="also time this many best-predicted configurations")
    ap.add_argument("--json", default=None, help="write the rows to this file")
    args = ap.parse_args()

    import cupy
    import torch

    from miofind.problem import ProblemDescription

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    n, c, h, w, f, s, pad, *mult = (int(v) for v in args.shape.split(","))
    k = c * (mult[0] if mult else 1)
    rows = []
    for lay in args.layouts.split(","):
        for dt in args.dtypes.split(","):
            for d in args.dirs:
                p = ProblemDescription.make(d, n=n, c=c, k=k, in_size=(h, w), filter_size=f, pads=pad, strides=s,
                                            groups=c, layout=lay, dtype=dt)
                r = bench_one(p, args, torch, cupy)
                if r:
                    rows.append(r)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        json.dump(rows, open(args.json, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
