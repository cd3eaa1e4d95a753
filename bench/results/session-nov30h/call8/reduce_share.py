"""Session nov30h, call 8: the split's reduce share of the Hopper W solution in a pipeline. For ResNet-50's narrow 3x3
W layers and the 1x1 ones at 56 x 56 (FP16 NHWC, N = 32; call 4's tuned configs, u4.sqlite.gz), the solution as built
(main kernel, then its reduce as a programmatic dependent) against its main kernel alone (the same launch writing the
same partial planes, no reduce; output not written), each timed back to back in a CUDA graph (kernel_timing.graph_ms,
the "gpu" timing of sweep_configs.py) and isolated (one call a replay, kernel_timing.isolated_ms). Outputs are not
checked; the solution as built is verified by every find."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
LAYERS = ("r50_64to64_56_3x3s1", "r50_128to128_56_3x3s2", "r50_128to128_28_3x3s1", "r50_64to256_56_1x1s1",
          "r50_256to64_56_1x1s1", "r50_256to128_56_1x1s1")


def main():
    import kernel_timing
    from miofind.harness import Harness
    from miofind.invokers import build_invoker, compile_kernel
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers.implicit_gemm_hopper_base import split_factory
    from shapes import _resnet50

    db = Path("/tmp/u8.sqlite")
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
        if len(sol.kernels) < 2:
            print(f"{name}: unsplit config {cfg}, no reduce", flush=True)
            continue
        full = build_invoker(p, sol)
        fv = dict(zip(sol.invoker_factory.__code__.co_freevars,
                      (c.cell_contents for c in sol.invoker_factory.__closure__)))
        main_only = split_factory(W.id, fv["main"], None, fv["maps"], fv["smem"], fv["ws"])(
            [compile_kernel(sol.kernels[0])])
        ws = h.workspace(sol.workspace_bytes)
        a, b, out, w = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, ws.data.ptr
        f_full = lambda st: full(a, b, out, w, st)          # noqa: E731
        f_main = lambda st: main_only(a, b, w, w, st)       # noqa: E731   (partials into the workspace, as split)
        t = {}
        for rnd in range(2):
            for label, fn in (("full", f_full), ("main", f_main)) if rnd == 0 else (("main", f_main), ("full", f_full)):
                t.setdefault(label, []).append((kernel_timing.graph_ms(fn), kernel_timing.isolated_ms(fn)))
        g = {k: min(x[0] for x in v) * 1e3 for k, v in t.items()}
        i = {k: min(x[1] for x in v) * 1e3 for k, v in t.items()}
        print(f"{name} {cfg}: back to back full {g['full']:.1f} main {g['main']:.1f} us (reduce {g['full'] - g['main']:.1f},"
              f" {100 * (g['full'] - g['main']) / g['full']:.0f}%); isolated full {i['full']:.1f} main {i['main']:.1f} us "
              f"(reduce {i['full'] - i['main']:.1f})", flush=True)


if __name__ == "__main__":
    main()
