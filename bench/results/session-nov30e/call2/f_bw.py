"""Session nov30e, call 2: how close do our forward kernels come to what this GPU's memory allows on ResNet-50's
memory-bound 1x1 layers at 56 x 56 (FP16 NHWC, N = 32)?

Per layer, on one Harness (every own and cuDNN candidate verified against the float64 reference first):
- ``move``: a kernel that moves exactly the layer's DRAM traffic, x (P x C) read once and y (P x K) written once
  (16 bytes a thread, grid-stride: y[p, k] = x[p, k mod C] for K >= C, the sum of x[p, k + jK] over j for K < C),
  its stores plain (``st``) or streaming (``cs``), at 2, 4 and 8 blocks of 256 threads an SM;
- the Hopper forward's and its copy-engine store's find configs (ConvImplicitGemmHopperFwd, ...FwdTmaStore);
- cuDNN's plans.
Times: isolated (one call in a CUDA graph, replayed) and back to back in a graph, medians of 3 interleaved passes.
``--ncu KEY`` runs one layer's fastest own config and fastest move once each (for ncu's DRAM counters).

    python f_bw.py OUT.json
    ncu ... python f_bw.py OUT.json --ncu    (reads OUT.json's picks)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

LAYERS = ("r50_64to256_56_1x1s1", "r50_256to64_56_1x1s1", "r50_256to128_56_1x1s1", "r50_64to64_56_1x1s1")
SRC = r"""
#include <cuda_fp16.h>
template <bool CS>
__device__ __forceinline__ void put(uint4* p, uint4 v) { if(CS) __stcs(p, v); else *p = v; }
template <bool CS>
__device__ __forceinline__ void move(const uint4* __restrict__ x, uint4* __restrict__ y, long long p, int c8, int k8)
{
    const long long n = p * k8;
    for(long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    {
        const long long q = i / k8;
        const int k = (int)(i - q * k8);
        uint4 v;
        if(k8 >= c8)
            v = __ldg(x + q * c8 + k % c8);
        else
        {
            v = __ldcs(x + q * c8 + k);
            for(int j = k + k8; j < c8; j += k8)
            {
                const uint4 u = __ldcs(x + q * c8 + j);
                __half2* a = reinterpret_cast<__half2*>(&v);
                const __half2* b = reinterpret_cast<const __half2*>(&u);
                a[0] = __hadd2(a[0], b[0]); a[1] = __hadd2(a[1], b[1]); a[2] = __hadd2(a[2], b[2]); a[3] = __hadd2(a[3], b[3]);
            }
        }
        put<CS>(y + i, v);
    }
}
extern "C" __global__ void move_st(const uint4* x, uint4* y, long long p, int c8, int k8) { move<false>(x, y, p, c8, k8); }
extern "C" __global__ void move_cs(const uint4* x, uint4* y, long long p, int c8, int k8) { move<true>(x, y, p, c8, k8); }
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=30)
    a = ap.parse_args()

    import cupy
    import kernel_timing as kt
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    from miofind.compile import cuda_include_dirs
    mod = cupy.RawModule(code=SRC, options=("-std=c++17",) + tuple(f"-I{d}" for d in cuda_include_dirs()))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    hop, ts, cud = (get_solver(s) for s in ("ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperFwdTmaStore",
                                            "ConvCudnnFwd"))
    picks = json.loads(Path(a.out).read_text())["picks"] if a.ncu else {}
    rows, out_picks = [], {}
    for name in LAYERS:
        kw = _resnet50(32)[name]
        p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **kw)
        h = Harness(p, verify=not a.ncu, seed=0)
        npix = kw["n"] * kw["in_size"][0] * kw["in_size"][1]
        c8, k8 = kw["c"] // 8, kw["k"] // 8
        y2 = cupy.empty(npix * kw["k"], dtype=cupy.float16)
        entries = []
        for cs in ("st", "cs"):
            for bps in (2, 4, 8):
                fn = mod.get_function(f"move_{cs}")
                grid = sms * bps

                def call(s_, fn=fn, grid=grid):
                    fn((grid,), (256,), (h.a, y2, cupy.int64(npix), cupy.int32(c8), cupy.int32(k8)),
                       stream=cupy.cuda.ExternalStream(s_))
                entries.append({"kind": "move", "cfg": {"store": cs, "blocks_per_sm": bps}, "call": call})
        for kind, solver, fam in (("hopper", hop, "implicit_gemm_hopper"), ("tma_store", ts, "implicit_gemm_hopper"),
                                  ("cudnn", cud, "cudnn")):
            if not solver.applicability(p):
                continue
            if a.ncu:
                cfgs = [picks[name][kind]] if kind in picks.get(name, {}) else []
            else:
                cfgs = None if kind == "cudnn" else [solver.default_config(p)] + [
                    c for c in solver.find_configs(p) if c is not None]
                if cfgs is not None:
                    cfgs = [c for i, c in enumerate(cfgs) if c not in cfgs[:i]]
            if a.ncu:
                for c in cfgs:
                    sol = solver.get_solution(p, c)
                    inv = build_invoker(p, sol)
                    ws = h.workspace(sol.workspace_bytes)
                    pw = 0 if ws is None else ws.data.ptr
                    entries.append({"kind": kind, "cfg": c, "ws": ws, "call": lambda s_, inv=inv, pw=pw: inv(
                        h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, pw, s_)})
                continue
            got = kt.timed_configs(h, p, solver, cfgs, fam, lambda call, inv, ws: {"call": call, "ws": ws})
            entries += [{"kind": kind, "cfg": c, **t} for c, t in got]
        if a.ncu:
            mv = picks[name]["move"]
            for e in entries:
                if e["kind"] != "move" or e["cfg"] == mv:
                    e["call"](cupy.cuda.get_current_stream().ptr)
            cupy.cuda.get_current_stream().synchronize()
            continue
        for _ in range(a.reps):
            for e in entries:
                e.setdefault("iso", []).append(kt.isolated_ms(e["call"], a.iters) * 1e3)
                e.setdefault("gpu", []).append(kt.graph_ms(e["call"], a.iters) * 1e3)
        for e in entries:
            e.pop("call"), e.pop("ws", None)
            e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
        mb = npix * (kw["c"] + kw["k"]) * 2 / 1e6
        best = {}
        for e in entries:
            if e["kind"] not in best or e["gpu_us"] < best[e["kind"]]["gpu_us"]:
                best[e["kind"]] = e
        out_picks[name] = {k: v["cfg"] for k, v in best.items()}
        print(f"\n{name}: {mb:.1f} MB moved", flush=True)
        for k, v in sorted(best.items(), key=lambda kv: kv[1]["gpu_us"]):
            print(f"  {k:9} iso {v['iso_us']:6.1f} us  gpu {v['gpu_us']:6.1f} us  {mb / v['gpu_us']:.2f} TB/s (gpu)  "
                  f"{v['cfg']}", flush=True)
        rows.append({"layer": name, "key": p.key(), "mb": mb, "entries": entries})
        Path(a.out).write_text(json.dumps({"rows": rows, "picks": out_picks}, indent=0))
    if not a.ncu:
        v = [math.log(min(b["gpu_us"] for b in r["entries"] if b["kind"] in ("hopper", "tma_store")) /
                      min(b["gpu_us"] for b in r["entries"] if b["kind"] == "move")) for r in rows]
        print(f"\ngeomean own best / move best (gpu): {math.exp(sum(v) / len(v)):.3f}")


if __name__ == "__main__":
    main()
