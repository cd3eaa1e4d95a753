"""Side-by-side benchmark on the GPU: our best own solver (cuDNN-backed solvers excluded) against
cuDNN's best (PyTorch, cudnn.benchmark=True, TF32 off), in one process, for every ResNet-50 v1.5
shape at N=32 x {F, B, W} x {FP32 strict, FP16, BF16} x {NCHW, NHWC}. With ``--cudnn-harness`` the find
also times the cuDNN-backed solvers (every engine config cuDNN offers, on the same buffers as ours):
that best plan is the primary baseline, PyTorch's the secondary. Tuned configs come from the FindDBs
(the shipped one included), as a user's find would use them.

Each row records every verified solver's median time (CUDA events, via find_solutions in
benchmark mode), the best own solver, cuDNN's time, achieved TFLOP/s and the fraction of the
roofline (max of FLOPs over the measured FP32/FP16 ceilings and bytes over 3.0 TB/s).

    python bench/bench_convs.py --dtype FP32 --out bench/results/resnet50-vs-cudnn [--dirs FBW] [--limit N]
        [--layout NHWC] [--cudnn-harness] [--set nonresnet|padded]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report import gmean  # noqa: E402
from bench_hopper_igemm import layer_set  # noqa: E402

CEIL_TFLOPS = {"FP32": 51.6, "FP16": 667.0, "BF16": 667.0}   # measured H100 ceilings: SGEMM, FP16 GEMM
BW = 3.0e12
BYTES = {"FP32": 4, "FP16": 2, "BF16": 2}


def cudnn_ms(p, torch):
    dt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[p.dtype]
    mf = torch.channels_last if p.layouts[0] == "NHWC" else torch.contiguous_format
    nchw = lambda shape: (shape[0], shape[-1], *shape[1:-1]) if p.layouts[0] == "NHWC" else shape
    x = torch.randn(nchw(p.x_shape), device="cuda", dtype=dt).contiguous(memory_format=mf)
    w = torch.randn(nchw(p.w_shape), device="cuda", dtype=dt).contiguous(memory_format=mf)
    kw = dict(stride=p.strides, padding=p.pads, dilation=p.dilations, groups=p.groups)
    y = torch.nn.functional.conv2d(x, w, **kw)
    dy = torch.randn_like(y)
    fn = {"F": lambda: torch.nn.functional.conv2d(x, w, **kw),
          "B": lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, **kw),
          "W": lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, **kw)}[p.direction]
    for _ in range(5):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(20):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return sorted(ts)[len(ts) // 2]


def roofline_ms(p):
    flops = p.flops()
    nbytes = BYTES[p.dtype] * sum(math.prod(s) for s in (p.x_shape, p.w_shape, p.y_shape))
    return max(flops / (CEIL_TFLOPS[p.dtype] * 1e12), nbytes / BW) * 1e3


def no_padded():
    """The Hopper solvers as before their padded copy-engine K tiles and W columns: no padded config is valid, none is a
    default or an alternate, and backward data's copy engine needs K % 64 == 0 again: ``padded_channels``, the rule
    every padded check asks (the base module's for the F and W solvers, backward data's own import), answers no."""
    from miofind.solvers import implicit_gemm_hopper_base as hb
    from miofind.solvers import implicit_gemm_hopper_bwd as bwd

    hb.padded_channels = bwd.padded_channels = lambda p, channels: False


def no_row64():
    """The Hopper solvers as before their 32-deep K tiles (TMA = 2, session nov29j): ``row64_fits``, the rule config_ok
    and the find's 32-deep alternates ask, answers no, so no such config is valid or tried."""
    from miofind.solvers import implicit_gemm_hopper_base as hb

    hb.row64_fits = lambda p: False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="FP32", choices=["FP32", "FP16", "BF16"])
    ap.add_argument("--dirs", default="FBW")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--limit", type=int, default=None, help="only the first N shapes")
    ap.add_argument("--out", required=True)
    ap.add_argument("--with-naive", action="store_true", help="also time the naive reference solvers")
    ap.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    ap.add_argument("--cudnn-harness", action="store_true",
                    help="also time the cuDNN-backed solvers in the find (the primary baseline)")
    ap.add_argument("--no-padded", action="store_true",
                    help="A/B: the Hopper family without its padded copy-engine K tiles (C % 64 != 0: cp.async only, "
                         "as before session nov29h), patched in this process")
    ap.add_argument("--no-row64", action="store_true",
                    help="A/B: the Hopper family without its 32-deep K tiles (TMA = 2), patched in this process")
    ap.add_argument("--set", choices=("resnet50", "nonresnet", "padded"), default="resnet50",
                    help="ResNet-50's layers, or tests/shapes.py's NON_RESNET (Inception, VGG, DenseNet; count 1 each) "
                         "or PADDED_C (real layers whose C is not a multiple of 64; count 1 each)")
    a = ap.parse_args()

    import torch

    if a.no_padded:
        no_padded()
    if a.no_row64:
        no_row64()
    from miofind import ProblemDescription, find_solutions
    from miofind.registry import solvers

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    # our own solvers: cuDNN-backed ones excluded, and the naive references (timed separately below
    # only where asked, they are orders of magnitude slower)
    own = [s.id for s in solvers() if s.family != "cudnn" and (a.with_naive or not s.is_reference)]
    cudnn_ids = [s.id for s in solvers() if s.family == "cudnn"] if a.cudnn_harness else []
    rows = []
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    out = os.path.join(a.out, f"bench_{a.dtype}_{a.dirs}{'_' + a.layout if a.layout != 'NCHW' else ''}"
                              f"{'_' + a.set if a.set != 'resnet50' else ''}.json")
    for name, count, kw in layer_set(a.set)[: a.limit]:
        for d in a.dirs:
            p = ProblemDescription.make(d, n=a.n, dtype=a.dtype, layout=a.layout, **kw)
            allres = find_solutions(p, mode="benchmark", solvers=own + cudnn_ids, store=False, warmup=3, iters=10)
            per = {s.solver_id: s.time_ms for s in allres}
            harness = min((s.time_ms for s in allres if s.solver_id in cudnn_ids), default=None)
            res = [s for s in allres if s.solver_id not in cudnn_ids]
            fam = {}
            for s in res:
                fam.setdefault(s.solver.family, (s.solver_id, s.time_ms))
            best = min(res, key=lambda s: s.time_ms) if res else None
            try:
                cud = cudnn_ms(p, torch)
            except Exception as e:  # pragma: no cover
                cud = float("nan")
                print("cuDNN failed:", e)
            row = {"key": p.key(), "direction": d, "dtype": a.dtype, "shape": name,
                   "count": count, "solvers_ms": per, "families_best": fam,
                   "failures": [f"{x.solver_id}({x.stage}): {x.reason[:200]}" for x in allres.failures],
                   "best_own": best.solver_id if best else None, "best_own_ms": best.time_ms if best else None,
                   "cudnn_ms": cud, "ratio": (best.time_ms / cud) if best and cud == cud else None,
                   "cudnn_harness_ms": harness, "ratio_harness": (best.time_ms / harness) if best and harness else None,
                   "tflops": p.flops() / (best.time_ms * 1e-3) / 1e12 if best else None,
                   "roofline_fraction": roofline_ms(p) / best.time_ms if best else None}
            rows.append(row)
            json.dump({"command": " ".join(sys.argv), "elapsed_s": time.time() - t0, "rows": rows},
                      open(out, "w"), indent=1)   # after every row: a run cut short keeps what it measured
            print(f"{row['shape']:<24}{d} {a.dtype}  own {row['best_own']} {row['best_own_ms'] or float('nan'):.4f} ms"
                  f"  cuDNN {cud:.4f} ms  ratio {row['ratio'] or float('nan'):.2f}"
                  + (f"  cuDNN in harness {harness:.4f} ms  ratio {row['ratio_harness']:.2f}" if harness and best else ""),
                  flush=True)
    print(summarize(rows))


def summarize(rows) -> str:
    lines = []
    for d in "FBW":
        rs = [r for r in rows if r["direction"] == d and r["ratio"]]
        if rs:
            gm = gmean([r["ratio"] for r in rs])
            lines.append(f"{d} {rs[0]['dtype']}: own-best / cuDNN-best (PyTorch) geometric mean {gm:.3f} over {len(rs)} shapes")
        rh = [r for r in rows if r["direction"] == d and r.get("ratio_harness")]
        if rh:
            lines.append(f"{d} {rh[0]['dtype']}: own-best / cuDNN's best plan in our harness, geometric mean "
                         f"{gmean([r['ratio_harness'] for r in rh]):.3f} over {len(rh)} shapes")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
