"""Session nov30h, call 1 (under ncu): DRAM bytes and throughput of the fastest configs of ResNet-50's W 1x1 layers
at 56 x 56 (FP16 NHWC, N = 32): the Hopper W solver's best swept config (session nov30f call 2), cuBLASLt's GEMM
(GemmWrw1x1_stride1, LT 0) and cuDNN's plan (ConvCudnnWrw's default), one launch each; outputs not checked."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

T = {"WGS": 1, "STAGES": 5, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 0}
CASES = {"r50_64to256_56_1x1s1": dict(T, BM=64, BN=64, SPLITK=66, RG=8),
         "r50_256to64_56_1x1s1": dict(T, BM=64, BN=64, SPLITK=33, RG=4),
         "r50_256to128_56_1x1s1": dict(T, BM=64, BN=256, SPLITK=33, RG=4)}


def main():
    import cupy
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    W, G, C = (get_solver(s) for s in ("ConvImplicitGemmHopperWrw", "GemmWrw1x1_stride1", "ConvCudnnWrw"))
    for name, cfg in CASES.items():
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        h = Harness(p, verify=False, seed=0)
        for solver, c in ((W, cfg), (G, {"LT": 0}), (C, None)):
            sol = solver.get_solution(p, c)
            inv = build_invoker(p, sol)
            ws = h.workspace(sol.workspace_bytes)
            print(name, solver.id, sol.config, flush=True)
            for _ in range(2):
                inv(h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr,
                    cupy.cuda.get_current_stream().ptr)
            cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    main()
