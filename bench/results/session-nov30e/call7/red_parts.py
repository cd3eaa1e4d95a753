"""Session nov30e, call 7: where the Hopper W split's reduce spends its time. Call 1's configs (main + reduce against
main alone) fit 1.66 us + 0.148 us per MB of partial planes, back to back in a graph. Per config, on the same
buffers (FP16 NHWC, N = 32, the Hopper W solver's configs of call 1 that split):
- ``whole``: the solution as shipped (the reduce a programmatic dependent of the main kernel);
- ``main``: the main kernel alone;
- ``reduce``: the reduce kernel alone (the planes left in the workspace by a run of the main kernel);
- ``plain``: main then reduce in plain stream order (no programmatic dependent launch).
Times: isolated (one call in a CUDA graph, replayed) and back to back in a graph, medians of 3 interleaved passes.

    python red_parts.py OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

CASES = (  # (layer, config) from call 1's fastest split configs
    ("r50_64to64_56_3x3s1", {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 6, "SPLITK": 28}),
    ("r50_128to128_28_3x3s1", {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 4, "SPLITK": 7}),
    ("r50_64to64_56_1x1s1", {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 6, "SPLITK": 131}),
    ("r50_64to256_56_1x1s1", {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 6, "SPLITK": 33}),
    ("r50_512to128_28_1x1s1", {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 4, "SPLITK": 16}),
    ("r50_1024to256_14_1x1s1", {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 4, "SPLITK": 8}),
)


def main():
    import cupy
    import kernel_timing as kt
    from miofind import tma
    from miofind.harness import Harness
    from miofind.compile import compile_kernel
    from miofind.invokers import build_invoker
    from miofind.launch import MAP, PTR, Launch
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from miofind.solvers.implicit_gemm_hopper_base import SMEM_STATIC, dense_pixels, x_dense, x_im2col
    from shapes import _resnet50

    W = get_solver("ConvImplicitGemmHopperWrw")
    rows = []
    for name, tile in CASES:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        cfg = dict(tile, CLUSTER=1, WSPEC=1, TMA=1, ST16=0)
        cfg["RG"] = wrw.red_groups(p, cfg)
        sol = W.get_solution(p, cfg)
        mk, rk = sol.kernels
        km, kr = compile_kernel(mk), compile_kernel(rk)
        smem = wrw.smem_bytes(cfg)
        if smem > SMEM_STATIC:
            km.max_dynamic_shared_size_bytes = smem
        dense = dense_pixels(p)
        maps = (tma.MapCache(tma.TiledSpec(p.dtype, (p.k, wrw.wrw_shape(p)[2]), (p.k * 2,), (64, wrw.BJ))),
                tma.MapCache(x_dense(p, wrw.BJ) if dense else x_im2col(p, wrw.BJ)))
        lm = Launch(km, mk.grid, mk.block, (PTR,) * 4 + (MAP,) * 2, shared_mem=smem).bind_maps(maps)
        lr_pdl = Launch(kr, rk.grid, rk.block, (PTR, PTR), pdl=True)
        lr = Launch(kr, rk.grid, rk.block, (PTR, PTR))
        h = Harness(p, verify=True, seed=0)
        inv = build_invoker(p, sol)
        ws = h.workspace(sol.workspace_bytes)
        err = h.check(inv, ws, "implicit_gemm_hopper")
        pa, pb, po, pw = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, ws.data.ptr
        calls = {
            "whole": lambda s: inv(pa, pb, po, pw, s),
            "main": lambda s: lm(s, pa, pb, po, pw),
            "reduce": lambda s: lr(s, pw, po),
            "reduce_pdl": lambda s: lr_pdl(s, pw, po),
            "plain": lambda s: (lm(s, pa, pb, po, pw), lr(s, pw, po)),
        }
        res = {k: {"iso": [], "gpu": []} for k in calls}
        for _ in range(3):
            for k, fn in calls.items():
                res[k]["iso"].append(kt.isolated_ms(fn, 40) * 1e3)
                res[k]["gpu"].append(kt.graph_ms(fn, 40) * 1e3)
        med = {k: {m: statistics.median(v[m]) for m in ("iso", "gpu")} for k, v in res.items()}
        eff = wrw.split_geometry(p, cfg["SPLITK"])[0]
        mb = eff * p.k * wrw.gemm_cols(p, cfg) * 4 / 1e6
        rows.append({"layer": name, "config": cfg, "planes": eff, "planes_mb": mb, "reduce_blocks": rk.grid[0],
                     "max_error": err, "us": med, "passes": res})
        print(f"{name} {eff} planes {mb:.1f} MB, reduce grid {rk.grid[0]}: " + "  ".join(
            f"{k} {v['iso']:.2f}/{v['gpu']:.2f}" for k, v in med.items()) + "  (iso/gpu us)", flush=True)
        del h
    Path(sys.argv[1]).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
