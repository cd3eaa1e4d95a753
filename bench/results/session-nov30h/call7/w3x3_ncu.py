"""Session nov30h, call 7 (under ncu): what bounds the Hopper W kernel on ResNet-50's narrow 3x3 layers (64 -> 64 @56,
128 -> 128 @56/2, 128 -> 128 @28: 300-335 TFLOP/s) against its wide ones (256 -> 256 @14, 512 -> 512 @7: 400-430), each
at the config call 4's default tune stored (u4.sqlite.gz), one launch each (after one unprofiled warm-up in the same
process is not possible under ncu's kernel filter, so each is launched twice and both are profiled); outputs not
checked."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
LAYERS = ("r50_64to64_56_3x3s1", "r50_128to128_56_3x3s2", "r50_128to128_28_3x3s1", "r50_256to256_14_3x3s1",
          "r50_512to512_7_3x3s1")


def main():
    import cupy
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    db = Path("/tmp/u7.sqlite")
    with gzip.open(ROOT / "bench/results/session-nov30h/call4/u4.sqlite.gz") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(db)
    W = get_solver("ConvImplicitGemmHopperWrw")
    for name in LAYERS:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        row = con.execute("select config from perf_records where problem_key=? and solver_id=?",
                          (p.key(), W.id)).fetchone()
        cfg = json.loads(row[0]) if row else W.default_config(p)
        h = Harness(p, verify=False, seed=0)
        sol = W.get_solution(p, cfg)
        inv = build_invoker(p, sol)
        ws = h.workspace(sol.workspace_bytes)
        flop = 2 * p.k * p.c * 9 * p.n * p.out_size[0] * p.out_size[1]
        print(name, f"{flop / 1e9:.2f} GFLOP", cfg, flush=True)
        for _ in range(2):
            inv(h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr,
                cupy.cuda.get_current_stream().ptr)
        cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    main()
