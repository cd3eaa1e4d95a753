"""What bounds the Hopper W kernel (session-mcast call 3): one W layer, each copy-engine config also built with the
timing-only diagnostic macro W_DIAG (w_diag.patch; 1: the producer hands each stage over without copying, so the
consumers multiply stale shared memory: the MMA and pipeline floor; 2: the copies without the MMA: the copy floor),
timed isolated (median of 50 launches, events). ``python3 w_diag.py C K H FILTER STRIDE CONFIG_JSON...``"""
import dataclasses
import json
import sys

import cupy

from miofind import invokers
from miofind.invokers import get_invoker
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

W = get_solver("ConvImplicitGemmHopperWrw")
orig = type(W).get_solution


def with_dbg(dbg):
    def get_solution(self, problem, config=None):
        sol = orig(self, problem, config)
        if dbg:
            sol.kernels[0] = dataclasses.replace(sol.kernels[0], macros=sol.kernels[0].macros + (("W_DIAG", str(dbg)),))
        return sol
    return get_solution


def time_us(inv, a, b, out, ws):
    st = cupy.cuda.get_current_stream()
    for _ in range(5):
        inv(a, b, out, ws, st.ptr)
    ts = []
    for _ in range(50):
        e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
        e0.record()
        inv(a, b, out, ws, st.ptr)
        e1.record()
        e1.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(e0, e1) * 1e3)
    return sorted(ts)[len(ts) // 2]


def main():
    c, k, h, f, s = (int(x) for x in sys.argv[1:6])
    p = ProblemDescription.make("W", n=32, c=c, k=k, in_size=(h, h), filter_size=f, pads=f // 2, strides=s,
                                layout="NHWC", dtype="FP16")
    sa, sb, so = p.io_shapes()
    rng = cupy.random.default_rng(0)
    a = rng.uniform(-1, 1, sa, dtype=cupy.float32).astype(cupy.float16)
    b = rng.uniform(-1, 1, sb, dtype=cupy.float32).astype(cupy.float16)
    out = cupy.empty(so, cupy.float16)
    for cj in sys.argv[6:]:
        cfg = json.loads(cj)
        row = []
        for dbg in (0, 1, 2):
            type(W).get_solution = with_dbg(dbg)
            invokers._invokers.clear()
            inv, wsb = get_invoker(p, W.id, cfg)
            ws = cupy.empty(max(wsb, 1), cupy.uint8)
            row.append(f"diag{dbg} {time_us(inv, a.data.ptr, b.data.ptr, out.data.ptr, ws.data.ptr if wsb else 0):6.1f}")
        print(p.key(), cj, " ".join(row), flush=True)


if __name__ == "__main__":
    main()
