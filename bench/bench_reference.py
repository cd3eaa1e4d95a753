"""What a find's float64 reference costs on the GPU: the naive solver's float64 kernel against the float64
GEMMs per filter tap (``miofind.harness.Reference``), on a model's layers, with their largest difference.

    python bench/bench_reference.py --out DIR [--model resnet50] [--batch 48] [--first-use]

Per problem (F, B and W of each unique layer, FP32 NCHW and FP16 NHWC): GPU time of each reference (CUDA
events, median of 3 after one warm-up run), the ratio, and max |gemm - naive| / max |naive|. With
``--first-use``, a fresh process per kind times its first reference of one mid-sized layer after CUDA
is initialised (the GEMM reference's first cuBLAS use, the naive kernel's load from the binary cache).
Writes ``reference.json`` and ``reference.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _time_ref(ref, p, a, b, runs=3):
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    out = None
    times = []
    for i in range(runs + 1):
        start.record()
        out = ref.output(p, a, b)
        stop.record()
        stop.synchronize()
        if i:
            times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times), out


def _first_use(kind: str, key: str) -> dict:
    code = f"""
import time, json, cupy
cupy.cuda.runtime.getDeviceCount(); cupy.zeros(1).sum(); cupy.cuda.Device().synchronize()
from miofind.problem import ProblemDescription
from miofind import harness
p = ProblemDescription.from_key({key!r})
rng = cupy.random.default_rng(0)
a_shape, b_shape, _ = p.io_shapes()
a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
cupy.cuda.Device().synchronize()
t0 = time.perf_counter()
ref = harness.reference_invoker_for_kind(p, {kind!r})
out = ref.output(p, a, b)
cupy.cuda.Device().synchronize()
t1 = time.perf_counter()
out = ref.output(p, a, b)
cupy.cuda.Device().synchronize()
t2 = time.perf_counter()
print(json.dumps(dict(kind={kind!r}, first_ms=(t1 - t0) * 1e3, second_ms=(t2 - t1) * 1e3)))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if r.returncode:
        return {"kind": kind, "error": r.stderr[-2000:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--first-use", action="store_true")
    ap.add_argument("--deadline", type=float, default=240.0, help="stop starting problems after this many seconds")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rows, first = [], []
    if args.first_use:
        key = "64-56-56-3x3-64-56-56-16-1x1-1x1-1x1-0-NCHW-FP32-F"
        for kind in ("gemm", "naive", "gemm", "naive"):
            first.append(_first_use(kind, key))
            print(first[-1], flush=True)

    import cupy

    from miofind import harness
    from miofind.models import model_layers
    from miofind.problem import ProblemDescription

    t_start = time.perf_counter()
    for dtype, layout in (("FP32", "NCHW"), ("FP16", "NHWC")):
        for la in model_layers(args.model):
            for d in "FBW":
                if time.perf_counter() - t_start > args.deadline:
                    break
                p = ProblemDescription.make(d, n=args.batch, c=la.c, k=la.k, in_size=la.in_size,
                                            filter_size=la.filter_size, pads=la.pads, strides=la.strides,
                                            groups=la.groups, dtype=dtype, layout=layout)
                rng = cupy.random.default_rng(1)
                a_shape, b_shape, _ = p.io_shapes()
                a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
                naive_ms, naive = _time_ref(harness.reference_invoker_for_kind(p, "naive"), p, a, b)
                gemm_ms, gemm = _time_ref(harness.reference_invoker_for_kind(p, "gemm"), p, a, b)
                diff = float(cupy.abs(gemm - naive).max()) / max(1e-300, float(cupy.abs(naive).max()))
                rows.append(dict(key=p.key(), flops=p.flops(), auto=harness.reference_kind(p), naive_ms=naive_ms,
                                 gemm_ms=gemm_ms, ratio=naive_ms / gemm_ms, rel_max_diff=diff))
                print(f"{p.key():70s} naive {naive_ms:9.3f} ms  gemm {gemm_ms:8.3f} ms  x{naive_ms / gemm_ms:6.1f}  "
                      f"diff {diff:.2e}", flush=True)
                del a, b, naive, gemm
                cupy.get_default_memory_pool().free_all_blocks()
    tot_n = sum(r["naive_ms"] for r in rows)
    tot_g = sum(r["gemm_ms"] for r in rows)
    tot_auto = sum(r["gemm_ms"] if r["auto"] == "gemm" else r["naive_ms"] for r in rows)
    summary = dict(problems=len(rows), naive_total_ms=tot_n, gemm_total_ms=tot_g, auto_total_ms=tot_auto,
                   max_rel_diff=max((r["rel_max_diff"] for r in rows), default=None), first_use=first)
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(dict(summary=summary, rows=rows), f, indent=1)
    with open(os.path.join(args.out, "reference.md"), "w") as f:
        f.write(f"# float64 reference, {args.model} batch {args.batch}\n\n")
        f.write(f"{len(rows)} problems: naive {tot_n:.1f} ms, GEMM {tot_g:.1f} ms, auto {tot_auto:.1f} ms in all; "
                f"largest relative difference {summary['max_rel_diff']:.2e}\n\n")
        for fu in first:
            f.write(f"- first use in a fresh process: {fu}\n")
        f.write("\n| problem | naive ms | GEMM ms | naive/GEMM | auto | max rel diff |\n| --- | ---: | ---: | ---: | --- | ---: |\n")
        for r in rows:
            f.write(f"| {r['key']} | {r['naive_ms']:.3f} | {r['gemm_ms']:.3f} | {r['ratio']:.1f} | {r['auto']} | "
                    f"{r['rel_max_diff']:.1e} |\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
