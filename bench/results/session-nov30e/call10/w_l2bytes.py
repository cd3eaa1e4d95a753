"""Session nov30e, call 10 (under ncu): L2 traffic of cuBLASLt's nvjet GEMM (unsplit 64 x 64 tiles in clusters of two,
call 8) and of our unsplit 64 x 64 Hopper W tile (6 stages; 8 stages) on ResNet-50's 1024 -> 512 @14 1x1 W (FP16 NHWC,
N = 32), one run each for ncu's counters (outputs not checked). PLAN_next item 2: if nvjet's blocks read about half
the L2 bytes ours do, its lead is the pair's shared (multicast) loads."""

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
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from shapes import _resnet50

    orig_ok = wrw.config_ok
    W = get_solver("ConvImplicitGemmHopperWrw")
    type(W).tile_ok = staticmethod(lambda p, c: orig_ok(p, dict(c, STAGES=min(c["STAGES"], 6))))   # 8 stages: a probe
    G = get_solver("GemmWrw1x1_stride1")
    p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)["r50_1024to512_14_1x1s1"])
    base = {"BM": 64, "BN": 64, "WGS": 1, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1, "RG": 4}
    h = Harness(p, verify=False, seed=0)
    for solver, cfg in ((W, dict(base, STAGES=6)), (W, dict(base, STAGES=8)), (G, {"LT": 0})):
        sol = solver.get_solution(p, cfg)
        inv = build_invoker(p, sol)
        ws = h.workspace(sol.workspace_bytes)
        print(solver.id, cfg, flush=True)
        inv(h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr,
            cupy.cuda.get_current_stream().ptr)
        cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    main()
