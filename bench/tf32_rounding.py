"""TF32 operands rounded against truncated: each TF32 solver's output error against the float64 reference on the same
inputs, ResNet-50's layers (NHWC, FP32 data, math="tf32"). Per (layer, direction, solver): the relative L2 error and the
gain error, the least-squares slope of the output on the reference minus 1 (truncation toward zero shrinks every
product: a negative gain that compounds layer after layer; rounding to nearest leaves none). Solvers: the rounding
Hopper ones (ConvImplicitGemmHopperFwdTf32Rn, ...BwdTf32Rn), the truncating Hopper builds (ConvImplicitGemmHopperFwd's
TF32 build, ConvImplicitGemmHopperBwdTf32; MIOFIND_HOPPER_TF32=1 is set here to offer them), cuDNN's TF32 plan and the
Ampere implicit GEMM's TF32 build.

    python3 bench/tf32_rounding.py --n 8 --dirs F,B --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

os.environ["MIOFIND_HOPPER_TF32"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

SOLVERS = {
    "F": ("ConvImplicitGemmHopperFwdTf32Rn", "ConvImplicitGemmHopperFwd", "ConvCudnnFwd", "ConvImplicitGemmFwd"),
    "B": ("ConvImplicitGemmHopperBwdTf32Rn", "ConvImplicitGemmHopperBwdTf32", "ConvCudnnBwd", "ConvImplicitGemmBwd"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--dirs", default="F,B")
    ap.add_argument("--json")
    a = ap.parse_args()

    import cupy

    from miofind.api import Solution, run_solution
    from miofind.problem import ProblemDescription
    from miofind.reference import conv_reference
    from miofind.registry import get_solver
    from miofind.verify import poison, random_array, rel_error, to_float64
    from shapes import _resnet50

    rows = []
    for d in a.dirs.split(","):
        solvers = [get_solver(s) for s in SOLVERS[d]]
        for name, kw in _resnet50(a.n).items():
            p = ProblemDescription.make(d, layout="NHWC", dtype="FP32", math="tf32", **kw)
            rng = cupy.random.default_rng(len(rows) + 1)
            sa, sb, so = p.io_shapes()
            x, w = random_array(sa, "FP32", rng), random_array(sb, "FP32", rng)
            ref = conv_reference(p, to_float64(x, "FP32"), to_float64(w, "FP32"))
            rr = float((ref * ref).sum())
            row = {"layer": name, "dir": d, "key": p.key(), "solvers": {}}
            for s in solvers:
                if not s.applicability(p):
                    continue
                out = cupy.empty(so, dtype=cupy.float32)
                poison(out, "FP32")
                cfg = s.default_config(p)
                sol = Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(p), cfg, False, p)
                run_solution(sol, x, w, out)
                o = to_float64(out, "FP32")
                row["solvers"][s.id] = {"rel_l2": rel_error(o, ref), "gain": float((o * ref).sum()) / rr - 1.0}
            rows.append(row)
            print(f"{d} {name:28s} " + "  ".join(f"{sid[15:] if sid.startswith('ConvImplicitGemm') else sid[4:]}: "
                                                  f"{v['rel_l2']:.2e} / {v['gain']:+.2e}"
                                                  for sid, v in row["solvers"].items()), flush=True)
            if a.json:
                Path(a.json).write_text(json.dumps({"n": a.n, "rows": rows}, indent=1))
    print("\ngeomean relative L2 error, mean gain error, over the layers each solver took (per direction):")
    for d in a.dirs.split(","):
        for sid in SOLVERS[d]:
            got = [r["solvers"][sid] for r in rows if r["dir"] == d and sid in r["solvers"]]
            if got:
                g = math.exp(sum(math.log(v["rel_l2"]) for v in got) / len(got))
                print(f"  {d} {sid:34s} {len(got):3d} layers  rel L2 {g:.3e}  gain {sum(v['gain'] for v in got) / len(got):+.3e}")


if __name__ == "__main__":
    main()
