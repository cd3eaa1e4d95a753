"""Markdown table from bench_convs.py JSON files: own best vs cuDNN per shape, geometric means,
per-family bests, and every case where a family was slower than the naive solver.

    python bench/report.py bench/results/resnet50-vs-cudnn/bench_FP32_FBW.json ... > bench/results/resnet50-vs-cudnn/side_by_side.md
"""

import json
import math
import sys

NAIVE = {"F": "ConvDirectNaiveConvFwd", "B": "ConvDirectNaiveConvBwd", "W": "ConvDirectNaiveConvWrw"}


def gmean(xs):
    xs = [x for x in xs if x and x == x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(paths):
    out = []
    slower = []
    for path in paths:
        d = json.load(open(path))
        rows = d["rows"]
        dt = rows[0]["dtype"] if rows else "?"
        out.append(f"## {dt}\n\nCommand: `{d['command']}` ({d['elapsed_s']:.0f} s)\n")
        out.append("| shape | dir | best own solver | own ms | cuDNN ms | own/cuDNN | TFLOP/s | roofline |")
        out.append("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            ratio = r["ratio"]
            out.append(f"| {r['shape']} | {r['direction']} | {r['best_own']} | {r['best_own_ms'] or float('nan'):.4f} | "
                       f"{r['cudnn_ms']:.4f} | {ratio if ratio else float('nan'):.2f} | {r['tflops'] or float('nan'):.1f} | "
                       f"{(r['roofline_fraction'] or float('nan')) * 100:.0f}% |")
            naive = r["solvers_ms"].get(NAIVE[r["direction"]])
            if naive:
                for fam, (sid, ms) in r["families_best"].items():
                    if ms > naive:
                        slower.append(f"{dt} {r['direction']} {r['shape']}: {fam} best {sid} {ms:.3f} ms > naive {naive:.3f} ms")
        out.append("")
        for d_ in "FBW":
            rs = [r["ratio"] for r in rows if r["direction"] == d_]
            if rs:
                out.append(f"- {dt} {d_}: own-best / cuDNN-best geometric mean **{gmean(rs):.2f}** over {len(rs)} shapes")
        out.append("")
    out.append("## Families slower than the naive solver where they apply\n")
    out += [f"- {s}" for s in slower] or ["- none: wherever the naive solver was timed (runs with --with-naive), every family's best was faster"]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
