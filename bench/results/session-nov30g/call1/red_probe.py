"""Session nov30g, call 1: is cuBLASLt's in-place split-K reduction (GemmWrw1x1's RED = 1) stable in time? Session nov30f's
guided tune stored {LT: 0, SK: 12, RED: 1} for ResNet-50's 256 -> 128 @56 1x1 W (FP16 NHWC, N = 32) at 26.6 us (its
default 27.1), and the same-run find that read it measured that config at 33.6 us. Here, on that layer and two more,
each config is built afresh (a new solution, invoker and workspace) in several rounds, verified, then timed by the
find's timing (Harness.measure, 3 warm-ups and 10 runs) and as one call in a graph (isolated), with the spread across
builds. Also the copy ceiling: a 64 MB device copy, fill and sum by CuPy, for the memory-bound 1x1 layers.

    python red_probe.py OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

LAYERS = ("r50_256to128_56_1x1s1", "r50_512to256_28_1x1s1", "r50_64to256_56_1x1s1")
CONFIGS = (None, {"LT": 0, "SK": 12, "RED": 1}, {"LT": 0, "SK": 12, "RED": 2}, {"LT": 0, "SK": 8, "RED": 1},
           {"LT": 0, "SK": 8, "RED": 2}, {"LT": 0, "SK": 16, "RED": 1}, {"LT": 0, "SK": 16, "RED": 2})
ROUNDS = 4


def copy_ceiling():
    import cupy

    n = 64 << 20
    a = cupy.ones(n // 4, dtype=cupy.float32)
    b = cupy.empty_like(a)
    out = {}
    for name, fn, nbytes in (("copy", lambda: b.__setitem__(Ellipsis, a), 2 * n), ("fill", lambda: b.fill(1.0), n),
                             ("sum", lambda: a.sum(), n)):
        for _ in range(3):
            fn()
        st, ev0, ev1 = cupy.cuda.get_current_stream(), cupy.cuda.Event(), cupy.cuda.Event()
        ts = []
        for _ in range(20):
            st.synchronize()
            ev0.record()
            fn()
            ev1.record()
            ev1.synchronize()
            ts.append(cupy.cuda.get_elapsed_time(ev0, ev1))
        ms = statistics.median(ts)
        out[name] = {"ms": ms, "TBps": nbytes / ms / 1e9}
        print(f"{name}: {ms * 1e3:.1f} us for {nbytes >> 20} MB moved, {nbytes / ms / 1e9:.2f} TB/s", flush=True)
    return out


def main():
    import kernel_timing as kt
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    res = {"ceiling": copy_ceiling(), "rows": []}
    S = get_solver("GemmWrw1x1_stride1")
    shapes = _resnet50(32)
    for name in LAYERS:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **shapes[name])
        h = Harness(p, verify=True, seed=0)
        for cfg in CONFIGS:
            find_t, iso_t = [], []
            for _ in range(ROUNDS):
                try:
                    sol = S.get_solution(p, cfg)
                    inv = build_invoker(p, sol)
                    ws = h.workspace(sol.workspace_bytes)
                    m = h.measure(inv, ws, S.family, 3, 10)
                    find_t.append(m.time_ms * 1e3)
                    pw = 0 if ws is None else ws.data.ptr
                    pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
                    iso_t.append(kt.isolated_ms(lambda s_, inv=inv, pw=pw: inv(pa, pb, po, pw, s_), 30) * 1e3)
                except Exception as e:
                    print(f"{name} {cfg}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    break
            if find_t:
                print(f"{name:24s} {str(cfg):36s} find {' '.join(f'{t:5.1f}' for t in find_t)}  isolated "
                      f"{' '.join(f'{t:5.1f}' for t in iso_t)} us", flush=True)
            res["rows"].append({"layer": name, "config": cfg, "find_us": find_t, "isolated_us": iso_t})
        del h
    Path(sys.argv[1]).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
