"""Session nov30e, call 1: where does the Hopper W split's time go on ResNet-50's W layers, and would a split summed
in L2 by the main kernel itself (no partial planes, no reduce launch) beat cuBLASLt's split-K GEMM there?

Per layer (N = 32, FP16 NHWC), on one Harness (same buffers; every candidate verified against the float64
reference before it is timed):
- ``orig``: the Hopper W solver's copy-engine configs (its find configs, and the tiles below at STAGES 4 / 6 and the
  splits its space tries), the whole solution (main + reduce);
- ``main``: the same split configs' main kernel alone (partial planes written, never summed: a lower bound for any
  change of the reduce; not verified, its output is not written);
- ``l2red``: a scratch copy of kernels_src/implicit_gemm_hopper_wrw.cu (written to kernels_src/ for the run, removed
  after it; never in the tree) whose split epilogue adds each block's FP32 tile into one plane of the workspace with
  ``red.global.add.v2.f32``, counts the tile's blocks with an atomic, and lets the last block of a tile convert the
  plane's tile into dw. A small kernel zeroes the plane and the counters first; the main kernel is its programmatic
  dependent and waits for it (griddepcontrol.wait) only before its first add. The sums' order is not fixed (not
  deterministic). Tiles as ``orig`` at more splits (blocks near 1 and 2 x 132);
- cuDNN's plans and GemmWrw1x1_stride1's find configs (cuBLASLt) where it applies.
Times: isolated (one call in a CUDA graph, replayed) and back to back in a graph, medians of --reps interleaved passes.

    python w_l2red.py OUT.json [--layers a,b] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

SCRATCH = "probe_wrw_l2red.cu"
ANCHOR = "    if(producer)\n        return;\n#if ST16\n"
EPILOGUE = r"""    if(producer)
        return;
#if SPLITK > 1
    {
        // the split summed in L2: every block adds its FP32 tile into plane 0 of ws; the last of a tile's SPLITK
        // blocks (an atomic count after ws's tiles) converts the plane's tile into dw
        grid_dep_wait();        // the zero kernel's plane and counters
        for_each_pair(acc, t, [&](int r, int c, float& v0, float& v1) {
            const int k = m0 + r, cl = n0 + c;
            if(k < GEMM_M && cl < GEMM_NP)
                asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(ws + (long long)k * GEMM_NP + cl), "f"(v0),
                             "f"(v1) : "memory");
        });
        __threadfence();
        bar_sync<1, NT_MMA>();
        __shared__ int s_last;
        unsigned* cnt = reinterpret_cast<unsigned*>(ws + (long long)GEMM_M * GEMM_NP);
        if(t == 0)
            s_last = atomicAdd(cnt + blockIdx.x, 1u) == SPLITK - 1;
        bar_sync<1, NT_MMA>();
        if(!s_last)
            return;
        __threadfence();
        constexpr int CPR4 = BN / 4;
        for(int q = t; q < BM * CPR4; q += NT_MMA)
        {
            const int r = q / CPR4, c4 = (q % CPR4) * 4;
            const int k = m0 + r, cl = n0 + c4;
            if(k >= GEMM_M || cl >= GEMM_NP)
                continue;
            const float4 v = __ldcg(reinterpret_cast<const float4*>(ws + (long long)k * GEMM_NP + cl));
#if W_PAD
            const int d = dw_col(cl);
            if(d < 0)
                continue;
#else
            const int d = cl;
#endif
            store_pair(dw + (long long)k * GEMM_N + d, v.x, v.y);
            store_pair(dw + (long long)k * GEMM_N + d + 2, v.z, v.w);
        }
        return;
    }
#endif
#if ST16
"""
ZERO = r"""
#define L2_TILES (((GEMM_M + BM - 1) / BM) * ((GEMM_NP + BN - 1) / BN))
#define L2_N4 (((long long)GEMM_M * GEMM_NP + L2_TILES + 3) / 4)
extern "C" __global__ void __launch_bounds__(256) igemm_hopper_wrw_zero(float* __restrict__ ws)
{
    grid_dep_launch();
    for(long long i = blockIdx.x * 256ll + threadIdx.x; i < L2_N4; i += (long long)gridDim.x * 256)
        reinterpret_cast<float4*>(ws)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}
"""
TILES = ((64, 64, 1), (64, 128, 1), (64, 256, 1), (128, 64, 2), (128, 128, 2), (128, 256, 2), (128, 128, 1))
STAGES = (4, 6)
DEFAULT_LAYERS = ("r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1,"
                  "r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,"
                  "r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1,r50_2048to512_7_1x1s1,r50_64to64_56_1x1s1,"
                  "r50_64to64_56_3x3s1,r50_128to128_28_3x3s1,r50_256to256_14_3x3s1")


def write_scratch():
    src = (ROOT / "kernels_src" / "implicit_gemm_hopper_wrw.cu").read_text()
    assert src.count(ANCHOR) == 1
    (ROOT / "kernels_src" / SCRATCH).write_text(src.replace(ANCHOR, EPILOGUE) + ZERO)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", default=DEFAULT_LAYERS)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--iters", type=int, default=30)
    a = ap.parse_args()
    write_scratch()
    try:
        run(a)
    finally:
        (ROOT / "kernels_src" / SCRATCH).unlink(missing_ok=True)


def run(a):
    import kernel_timing as kt
    from miofind import tma
    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.launch import MAP, PTR, Launch
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solver import ConvSolution, KernelInfo, ceil_div
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from miofind.solvers.implicit_gemm_hopper_base import SMEM_STATIC, dense_pixels, x_dense, x_im2col
    from miofind.tuning.precompile import precompile
    from shapes import _resnet50

    dev = current_device()
    W, cud, gemm = (get_solver(s) for s in ("ConvImplicitGemmHopperWrw", "ConvCudnnWrw", "GemmWrw1x1_stride1"))
    layers = _resnet50(32)

    def maps_of(p, cfg):
        dense = cfg["TMA"] and dense_pixels(p)
        return (tma.MapCache(tma.TiledSpec(p.dtype, (p.k, wrw.wrw_shape(p)[2]), (p.k * 2,), (64, wrw.BJ))),
                tma.MapCache(x_dense(p, wrw.BJ) if dense else x_im2col(p, wrw.BJ)))

    def main_only(p, cfg):
        sol = W.get_solution(p, cfg)
        mk, smem = sol.kernels[0], wrw.smem_bytes(cfg)
        maps = maps_of(p, cfg)

        def factory(kerns):
            if smem > SMEM_STATIC:
                kerns[0].max_dynamic_shared_size_bytes = smem
            lm = Launch(kerns[0], mk.grid, mk.block, (PTR,) * 4 + (MAP,) * 2, shared_mem=smem).bind_maps(maps)
            return lambda pa, pb, po, pw, st: lm(st, pa, pb, po, pw)
        return ConvSolution(W.id, [mk], sol.workspace_bytes, factory, cfg)

    def l2red(p, cfg):
        sol = W.get_solution(p, cfg)
        m0 = sol.kernels[0]
        mk = KernelInfo(SCRATCH, m0.name, m0.grid, m0.block, m0.macros, m0.options)
        m, n = p.k, wrw.gemm_cols(p, cfg)
        n4 = ceil_div(m * n + wrw.tiles(p, cfg), 4)
        zk = KernelInfo(SCRATCH, "igemm_hopper_wrw_zero", (min(ceil_div(n4, 256), 264), 1, 1), (256, 1, 1),
                        m0.macros, m0.options)
        smem, maps = wrw.smem_bytes(cfg), maps_of(p, cfg)

        def factory(kerns):
            kz, km = kerns
            if smem > SMEM_STATIC:
                km.max_dynamic_shared_size_bytes = smem
            lz = Launch(kz, zk.grid, zk.block, (PTR,))
            lm = Launch(km, mk.grid, mk.block, (PTR,) * 4 + (MAP,) * 2, shared_mem=smem, pdl=True).bind_maps(maps)

            def inv(pa, pb, po, pw, st):
                lz(st, pw)
                lm(st, pa, pb, po, pw)
            return inv
        return ConvSolution(W.id + "L2Red", [zk, mk], n4 * 16, factory, cfg)

    cases, todo = [], []
    for name in a.layers.split(","):
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **layers[name])
        nt_ok = lambda c: c["TMA"] == 1 and c["CLUSTER"] == 1 and c["ST16"] == 0  # noqa: E731
        pool = [c for c in W.config_space(p) if nt_ok(c) and c["STAGES"] in STAGES
                and (c["BM"], c["BN"], c["WGS"]) in TILES]
        orig = [W.default_config(p)] + [c for c in W.find_configs(p) if c is not None]
        orig = [c for i, c in enumerate(orig) if c not in orig[:i]]
        orig += [c for c in pool if c not in orig]
        split = [c for c in orig if wrw.split_geometry(p, c["SPLITK"])[0] > 1]
        red = []
        for c in split:
            base = dict(c, ST16=0, CLUSTER=1)     # the cluster split's epilogue is not the one patched
            nt = wrw.tiles(p, base)
            effs = {wrw.split_geometry(p, c["SPLITK"])[0]}
            for blocks in (132, 264):
                for s in (blocks // nt, ceil_div(blocks, nt)):
                    if s > 1:
                        effs.add(wrw.split_geometry(p, s)[0])
            for e in sorted(effs):
                cand = dict(base, SPLITK=e)
                cand["RG"] = wrw.red_groups(p, cand)
                if e > 1 and wrw.config_ok(p, cand) and cand not in red:
                    red.append(cand)
        gcfgs = []
        if gemm.applicability(p):
            gcfgs = [c for c in gemm.find_configs(p) if c is not None] + [gemm.default_config(p)]
            gcfgs = [c for i, c in enumerate(gcfgs) if c not in gcfgs[:i]]
        cases.append((name, p, orig, split, red, gcfgs))
        for c in orig:
            todo += W.get_solution(p, c).kernels
        for c in red:
            todo += l2red(p, c).kernels
        print(f"{name}: {len(orig)} orig, {len(split)} split, {len(red)} l2red, {len(gcfgs)} gemm", flush=True)
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} kernels in {time.time() - t0:.1f} s; errors: {len(errs) if errs else 'none'}",
          flush=True)
    for k, v in list((errs or {}).items())[:3]:
        print("  ", k[:200], str(v)[:1500], flush=True)

    rows = []
    for name, p, orig, split, red, gcfgs in cases:
        h = Harness(p, verify=True, seed=0)
        entries = []

        def add(kind, cfg, sol, verify=True):
            try:
                inv = build_invoker(p, sol)
                ws = h.workspace(sol.workspace_bytes)
                pw = 0 if ws is None else ws.data.ptr
                err = h.check(inv, ws, "implicit_gemm_hopper") if verify else None
                pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
                entries.append({"kind": kind, "cfg": cfg, "err": err, "ws": ws,
                                "call": lambda s_, inv=inv, pw=pw: inv(pa, pb, po, pw, s_)})
            except Exception as e:
                print(f"  {kind} {cfg}: {type(e).__name__}: {str(e)[:300]}", flush=True)

        for c in orig:
            add("orig", c, W.get_solution(p, c))
        for c in split:
            add("main", c, main_only(p, c), verify=False)
        for c in red:
            add("l2red", c, l2red(p, c))
        for kind, solver, cfgs, fam in (("cudnn", cud, None, "cudnn"), ("gemm", gemm, gcfgs, gemm.family)):
            if kind == "gemm" and not cfgs:
                continue
            got = kt.timed_configs(h, p, solver, cfgs, fam, lambda call, inv, ws: {"call": call, "ws": ws})
            entries += [{"kind": kind, "cfg": c, **t} for c, t in got]
        for _ in range(a.reps):
            for e in entries:
                e.setdefault("iso", []).append(kt.isolated_ms(e["call"], a.iters) * 1e3)
                e.setdefault("gpu", []).append(kt.graph_ms(e["call"], a.iters) * 1e3)
        for e in entries:
            del e["call"], e["ws"]
            e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
        best = {}
        for e in entries:
            if e["kind"] not in best or e["iso_us"] < best[e["kind"]]["iso_us"]:
                best[e["kind"]] = e
        row = {"layer": name, "key": p.key(), "entries": entries,
               "best": {k: {"iso_us": v["iso_us"], "gpu_us": v["gpu_us"], "cfg": v["cfg"]} for k, v in best.items()}}
        rows.append(row)
        cb = best["cudnn"]["iso_us"]
        print(f"\n{name}: cuDNN {cb:.1f} us" + "".join(
            f"; {k} {v['iso_us']:.1f} ({v['iso_us'] / cb:.3f})" for k, v in best.items() if k != "cudnn"), flush=True)
        for kind in ("orig", "main", "l2red"):
            for e in sorted((e for e in entries if e["kind"] == kind), key=lambda e: e["iso_us"])[:3]:
                print(f"  {kind:5} {e['iso_us']:6.1f} iso {e['gpu_us']:6.1f} gpu  {e['cfg']}", flush=True)
        del h
        Path(a.out).write_text(json.dumps({"device": dev.name, "rows": rows}, indent=0))

    def gm(v):
        return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
    print("\ngeomean over cuDNN's best plan (isolated):")
    for label, pick in (("orig", ("orig",)), ("orig or gemm", ("orig", "gemm")), ("l2red", ("l2red",)),
                        ("l2red or orig or gemm", ("l2red", "orig", "gemm")), ("main (lower bound)", ("main",)),
                        ("gemm", ("gemm",))):
        v = [min(r["best"][k]["iso_us"] for k in pick if k in r["best"]) / r["best"]["cudnn"]["iso_us"]
             for r in rows if any(k in r["best"] for k in pick)]
        print(f"  {label}: {gm(v):.3f} ({len(v)} layers)")


if __name__ == "__main__":
    main()
