"""Session nov30e, call 8 (under ncu): the 1x1 stride-1 W layers of ResNet-50 at 14 x 14 and 7 x 7 (FP16 NHWC, N = 32),
where our Hopper W main loop alone is 1.06-1.65 of cuDNN (call 1): one run each of our fastest config of call 1, our
128 x 256 and 128 x 128 two-warpgroup tiles at the split call 1 measured fastest for them, cuBLASLt's default place
(GemmWrw1x1_stride1, LT 0) and cuDNN's plan of call 1, for ncu's sections (run under ``ncu``; outputs not checked).

    ncu --section ... python w_ncu.py
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

LAYERS = ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1", "r50_512to2048_7_1x1s1")


def main():
    import cupy
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    rows = {r["layer"]: r for r in json.load(gzip.open(ROOT / "bench/results/session-nov30e/call1/w_l2red.json.gz"))[
        "rows"]}
    W, G, C = (get_solver(s) for s in ("ConvImplicitGemmHopperWrw", "GemmWrw1x1_stride1", "ConvCudnnWrw"))
    for name in LAYERS:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        r = rows[name]

        def best(kind, keep=lambda c: True):
            es = [e for e in r["entries"] if e["kind"] == kind and keep(e["cfg"])]
            return min(es, key=lambda e: e["gpu_us"])["cfg"] if es else None
        runs = [(W, best("orig")), (W, best("orig", lambda c: (c["BM"], c["BN"], c["WGS"]) == (128, 256, 2))),
                (W, best("orig", lambda c: (c["BM"], c["BN"], c["WGS"]) == (128, 128, 2))), (G, {"LT": 0}),
                (C, best("cudnn"))]
        h = Harness(p, verify=False, seed=0)
        for solver, cfg in runs:
            if cfg is None:
                continue
            sol = solver.get_solution(p, cfg)
            inv = build_invoker(p, sol)
            ws = h.workspace(sol.workspace_bytes)
            print(name, solver.id, cfg, flush=True)
            inv(h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr,
                cupy.cuda.get_current_stream().ptr)
            cupy.cuda.get_current_stream().synchronize()
        del h


if __name__ == "__main__":
    main()
