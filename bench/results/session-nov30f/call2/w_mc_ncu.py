"""Session nov30f, call 2 (under ncu): L2 traffic of the Hopper W kernel's unsplit 64 x 64 tile (8 stages, ST16)
unpaired and in multicast pairs (MC = 2), and of cuBLASLt's nvjet GEMM, on ResNet-50's 1024 -> 512 @14 1x1 W (FP16
NHWC, N = 32), one run each for ncu's counters (outputs not checked). Call 1: the pairs ran 1.08-1.20x the time of the
same configs unpaired; do they move fewer L2 bytes at all?"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main():
    import cupy
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    W, G = get_solver("ConvImplicitGemmHopperWrw"), get_solver("GemmWrw1x1_stride1")
    p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)["r50_1024to512_14_1x1s1"])
    base = {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1,
            "RG": 4}
    h = Harness(p, verify=False, seed=0)
    for solver, cfg in ((W, dict(base, MC=1)), (W, dict(base, MC=2)), (W, dict(base, MC=2, STAGES=12)),
                        (G, {"LT": 0})):
        sol = solver.get_solution(p, cfg)
        inv = build_invoker(p, sol)
        ws = h.workspace(sol.workspace_bytes)
        print(solver.id, cfg, flush=True)
        inv(h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr,
            cupy.cuda.get_current_stream().ptr)
        cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    main()
