"""Generic builds against specialised ones, on the GPU: kernel time and cold-start cost per family.

For every layer of a model preset (``--model``, default ResNet-50; N=32 and N=1 by default) and each solver with a generic build
(miofind.generic) that applies, F and W (and B where a family has one): the kernel time of the
generic build and of the specialised build of the same config (CUDA events, median of 10 runs after
3 warm-ups, ``harness.Harness.time``), both verified against the float64 reference first, and the
host time to get each ready from a warm binary cache (generic: load a module instance and write its
parameter block; specialised: NVRTC compile, reported separately, cache bypassed). Writes
``generic_vs_specialised.json`` and a Markdown table (geometric-mean time ratio per solver and
direction: above 1, the generic build is slower) into ``--out``.

    python bench/bench_generic.py --out bench/results/generic-builds [--batches 32,1] [--dtypes FP32,FP16]
        [--model mobilenet_v2] [--families gemm,depthwise]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="32,1")
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--model", default="resnet50", help="the preset whose layers are timed (mobilenet_v2: depthwise)")
    ap.add_argument("--families", default="", help="only these solver families, comma-separated (default all)")
    args = ap.parse_args()

    from miofind import generic
    from miofind.compile import nvrtc_compile
    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.models import model_problems
    from miofind.registry import solvers

    arch = current_device().arch
    rows = []
    cands = [s for s in solvers() if any(f in generic.RUNTIME for f in getattr(s, "kernel_files", ()))]
    if args.families:
        cands = [s for s in cands if s.family in args.families.split(",")]
    for batch in (int(b) for b in args.batches.split(",")):
        probs = model_problems(args.model, batch=batch, dtypes=args.dtypes.split(","), layouts=args.layouts.split(","))
        for p in probs:
            for s in cands:
                if not s.applicability(p) or not generic.has_generic(s, p):
                    continue
                sol = s.get_solution(p, generic.generic_config(s, p, None))
                t0 = time.perf_counter()
                ginv = generic.build_generic_invoker(sol)        # the generic cubin may compile once here
                g_ready_ms = (time.perf_counter() - t0) * 1e3
                t0 = time.perf_counter()
                for k in sol.kernels:
                    nvrtc_compile(k, arch)
                spec_compile_ms = (time.perf_counter() - t0) * 1e3
                sinv = build_invoker(p, sol)
                h = Harness(p, verify=True, seed=0)
                ws = h.workspace(sol.workspace_bytes)
                row = {"problem": p.key(), "solver": s.id, "direction": p.direction, "config": sol.config,
                       "generic_ready_ms": g_ready_ms, "specialised_compile_ms": spec_compile_ms}
                try:
                    row["generic_err"] = h.check(ginv, ws, s.family)
                    row["generic_ms"] = h.time(ginv, ws)[0]
                    row["specialised_err"] = h.check(sinv, ws, s.family)
                    row["specialised_ms"] = h.time(sinv, ws)[0]
                except Exception as e:  # a verification failure is a result to report, not a crash
                    row["error"] = f"{e.__class__.__name__}: {str(e).splitlines()[0][:300]}"
                h.release()
                rows.append(row)
                print(json.dumps(row), flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "generic_vs_specialised.json").write_text(json.dumps(rows, indent=1))
    groups: dict[tuple, list] = {}
    for r in rows:
        if "generic_ms" in r and "specialised_ms" in r:
            groups.setdefault((r["solver"], r["direction"]), []).append(r)
    lines = ["| solver | dir | cases | generic / specialised time (geomean) | worst | generic ready ms (median) | "
             "specialised compile ms (median) |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (sid, d), rs in sorted(groups.items()):
        ratios = [r["generic_ms"] / r["specialised_ms"] for r in rs]
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        lines.append(f"| {sid} | {d} | {len(rs)} | {gm:.2f} | {max(ratios):.2f} | "
                     f"{med([r['generic_ready_ms'] for r in rs]):.1f} | {med([r['specialised_compile_ms'] for r in rs]):.0f} |")
    failed = [r for r in rows if "error" in r]
    lines.append(f"\n{len(rows)} cases, {len(failed)} failed verification or launch.")
    (out / "generic_vs_specialised.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
