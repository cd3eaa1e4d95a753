"""Session nov30g, call 2: is a GEMM config's cuBLASLt algorithm the same in every process? A GemmWrw1x1 config
{LT: i, SK: k, RED: r} is the i-th result of cuBLASLt's heuristic with its split set to k ways. Session nov30f's tune
measured {LT: 0, SK: 12, RED: 1} on ResNet-50's 256 -> 128 @56 1x1 W (FP16 NHWC, N = 32) at 26.6 us, its same-run
find at 33.6 us, and call 1 at 28.4 us. Here each of several processes builds configs in its own order and prints the
algorithm each plan holds (cuBLASLt's 64-byte opaque cublasLtMatmulAlgo_t) and the find's timing of each.

    python lt_identity.py ORDER OUT.json      (ORDER: a, b or c)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

T = {"LT": 0, "SK": 12, "RED": 1}
ORDERS = {
    "a": [None, T, {"LT": 0, "SK": 16, "RED": 2}, {"LT": 1, "SK": 12, "RED": 1}],
    "b": [T, None, {"LT": 1, "SK": 12, "RED": 1}, {"LT": 0, "SK": 16, "RED": 2}],
    # the tune's order, roughly: many places and splits first, the tuned config late
    "c": [{"LT": i, "SK": k, "RED": r} for i in range(4) for k in (2, 4, 8, 16, 32) for r in (1, 2)] + [None, T],
}


def main():
    from miofind import cublas
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    seen = []
    orig = cublas.LtGemm._plan

    def plan(self, align):
        out = orig(self, align)
        if out is not None:
            seen.append({"algo": self.algo, "splitk": self.splitk, "reduction": self.reduction,
                         "words": [f"{w:016x}" for w in out[0]], "ws": out[1]})
        return out
    cublas.LtGemm._plan = plan

    S = get_solver("GemmWrw1x1_stride1")
    p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)["r50_256to128_56_1x1s1"])
    h = Harness(p, verify=True, seed=0)
    rows = []
    for cfg in ORDERS[sys.argv[1]]:
        n0 = len(seen)
        try:
            sol = S.get_solution(p, cfg)
            inv = build_invoker(p, sol)
            ws = h.workspace(sol.workspace_bytes)
            ts = [h.measure(inv, ws, S.family, 3, 10).time_ms * 1e3 for _ in range(3)]
        except Exception as e:
            print(f"{cfg}: {type(e).__name__}: {str(e)[:160]}", flush=True)
            continue
        plans = seen[n0:]
        rows.append({"config": cfg, "us": ts, "plans": plans})
        if cfg in (None, T) or sys.argv[1] != "c":
            print(f"{sys.argv[1]} {str(cfg):34s} {' '.join(f'{t:5.1f}' for t in ts)} us  "
                  + " | ".join(" ".join(q["words"]) + f" ws {q['ws']}" for q in plans), flush=True)
    Path(sys.argv[2]).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
