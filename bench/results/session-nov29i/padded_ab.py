"""A/B of the padded K tiles' live k steps (session nov29i): each padded copy-engine config of the Hopper forward and
backward data (and the copy-engine-store forward) built from two kernel sources in one process, on the same Harness:
"before" = implicit_gemm_hopper_fwd.cu as committed before the change (every k16 step of a tap's last K tile
multiplied, zeros included), "after" = the tree's (a tap's last K tile multiplies its live channels' k16 steps only).
Anchors in the same run: the cp.async default tile (default_tile(copy_engine=False)) and cuDNN's fastest plan.
Each candidate is verified against the float64 reference first (Harness.check), then timed isolated (one call in a
CUDA graph, replayed), the two sides alternating over ROUNDS rounds; the minimum of the rounds' medians per side.

    python padded_ab.py FWD_BEFORE.cu OUT.json [--layers a,b] [--deadline S]
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench"), str(ROOT)]

import kernel_timing  # noqa: E402
import miofind.compile as mc  # noqa: E402

PERSIST_TILES = ((128, 64, 2), (256, 64, 2), (128, 128, 2), (128, 256, 2), (64, 128, 1), (64, 256, 1), (192, 128, 3))
ROUNDS = 3


def _init(kdir: str) -> None:
    mc._kernels_dir = lambda: Path(kdir)
    mc.kernel_source.cache_clear()
    mc.source_hash.cache_clear()


def precompile_side(kernels, arch: str, kdir: str) -> int:
    """Compile the kernels missing from the binary cache (keyed by their source as the current side reads it) in a
    process pool whose workers read the kernel sources from ``kdir``; compile errors raise."""
    from concurrent.futures import ProcessPoolExecutor

    from miofind.compile import binary_key, cached_cubin, private_cache_dir
    from miofind.tuning.precompile import _compile_one

    todo, seen = [], set()
    for k in kernels:
        key = binary_key(k, arch)
        path = private_cache_dir() / f"{key}.cubin"
        if key not in seen and cached_cubin(path) is None:
            seen.add(key)
            todo.append((k, arch, str(path)))
    with ProcessPoolExecutor(max_workers=14, initializer=_init, initargs=(kdir,)) as pool:
        errs = [e for e in pool.map(_compile_one, todo) if e]
    if errs:
        raise RuntimeError(f"{len(errs)} compile errors, the first: {errs[0]}")
    return len(todo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("out")
    ap.add_argument("--layers", default="")
    ap.add_argument("--dirs", default="F,B")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--deadline", type=float, default=1e9)
    a = ap.parse_args()
    t_start = time.time()

    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers import implicit_gemm_hopper_base as hb
    from shapes import PADDED_C

    after_dir = mc._kernels_dir()
    before_dir = Path(tempfile.mkdtemp()) / "kernels_src"
    shutil.copytree(after_dir, before_dir)
    shutil.copy(a.before, before_dir / "implicit_gemm_hopper_fwd.cu")
    dirs = {"after": after_dir, "before": before_dir}

    def use(side: str) -> None:
        mc._kernels_dir = lambda: dirs[side]
        mc.kernel_source.cache_clear()
        mc.source_hash.cache_clear()

    from miofind.device import current_device
    from miofind.invokers import build_invoker
    arch = current_device().arch
    rows, cases = [], []
    layers = [x for x in a.layers.split(",") if x] or list(PADDED_C)
    for name in layers:
        for d in a.dirs.split(","):
            kw = dict(PADDED_C[name], n=32)
            p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **kw)
            hop = get_solver("ConvImplicitGemmHopperFwd" if d == "F" else "ConvImplicitGemmHopperBwd")
            if not hop.applicability(p) or not hb.padded_channels(p, p.c if d == "F" else p.k):
                continue
            cands = []
            for bm, bn, wgs in PERSIST_TILES:
                for st in (4,):
                    c = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1,
                         "PINGPONG": 0}
                    if hop.is_valid_config(p, c):
                        cands.append((hop, c))
            for c in hop.find_configs(p):
                c = c or hop.default_config(p)
                if c.get("TMA") and (hop, c) not in cands:
                    cands.append((hop, c))
            ts = get_solver("ConvImplicitGemmHopperFwdTmaStore")
            if d == "F" and ts.applicability(p):
                for c in [ts.default_config(p)] + ts.alternatives(p):
                    cands.append((ts, c))
            cases.append((name, d, p, hop, cands))
    # every candidate's kernels compiled from both sources first, each side in processes that read its source
    for side in ("after", "before"):
        use(side)
        todo = [k for _, _, p, _, cands in cases for solver, c in cands for k in solver.get_solution(p, c).kernels]
        if side == "after":     # the cp.async default tiles (the anchor, after only)
            todo += [k for _, _, p, hop, _ in cases
                     for k in hop.get_solution(p, hb.default_tile(hop.forward_problem(p), copy_engine=False)).kernels]
        t0 = time.time()
        print(f"{side}: {precompile_side(todo, arch, str(dirs[side]))} kernels compiled in {time.time() - t0:.0f} s",
              flush=True)
    use("after")
    for name, d, p, hop, cands in cases:
        if time.time() - t_start > a.deadline:
            print(f"deadline: stopped before {name} {d}", flush=True)
            break
        h = Harness(p, verify=True, seed=0)
        row = {"layer": name, "direction": d, "key": p.key(), "configs": []}

        def timed(solver, cfg):
            sol = solver.get_solution(p, cfg)
            inv = build_invoker(p, sol)
            ws = h.workspace(sol.workspace_bytes)
            h.check(inv, ws, "implicit_gemm_hopper" if solver.family == "implicit_gemm_hopper" else "cudnn")
            pw = 0 if ws is None else ws.data.ptr
            pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
            return lambda: kernel_timing.isolated_ms(lambda s_: inv(pa, pb, po, pw, s_), a.iters)

        use("after")
        try:
            cp = hb.default_tile(hop.forward_problem(p), copy_engine=False)
            row["cp_async_ms"] = min(timed(hop, cp)() for _ in range(ROUNDS))
            row["cp_async_cfg"] = cp
        except Exception as e:
            print(f"  cp.async default: {type(e).__name__}: {str(e)[:160]}", flush=True)
        cud = get_solver("ConvCudnnFwd" if d == "F" else "ConvCudnnBwd")
        best = None
        for c in cud.find_configs(p)[:8]:
            try:
                t = min(timed(cud, c)() for _ in range(ROUNDS))
                best = t if best is None else min(best, t)
            except Exception as e:
                print(f"  cuDNN {c}: {type(e).__name__}: {str(e)[:120]}", flush=True)
        row["cudnn_ms"] = best
        for solver, cfg in cands:
            try:
                use("after")
                fa = timed(solver, cfg)
                use("before")
                fb = timed(solver, cfg)
            except Exception as e:
                print(f"  {solver.id} {cfg}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            ta, tb = [], []
            for _ in range(ROUNDS):
                ta.append(fa())
                tb.append(fb())
            row["configs"].append({"solver": solver.id, "config": cfg, "after_ms": min(ta), "before_ms": min(tb)})
        use("after")
        if row["configs"]:
            ba = min(c["after_ms"] for c in row["configs"])
            bb = min(c["before_ms"] for c in row["configs"])
            row.update(best_after_ms=ba, best_before_ms=bb)
            f = lambda v: f"{v * 1e3:7.1f}" if v else "      -"  # noqa: E731
            print(f"{name:24s} {d} padded best before {f(bb)} after {f(ba)}  cp.async default "
                  f"{f(row.get('cp_async_ms'))}  cuDNN {f(best)} us  ({len(row['configs'])} configs; per config "
                  f"after/before geomean {math.exp(sum(math.log(c['after_ms'] / c['before_ms']) for c in row['configs']) / len(row['configs'])):.3f})",
                  flush=True)
        rows.append(row)
        del h
        Path(a.out).write_text(json.dumps({"rows": rows}, indent=1))

    for d in a.dirs.split(","):
        rs = [r for r in rows if r["direction"] == d and "best_after_ms" in r]
        if not rs:
            continue
        g = lambda num, den: math.exp(sum(math.log(r[num] / r[den]) for r in rs if r.get(num) and r.get(den)) /  # noqa
                                      max(1, sum(1 for r in rs if r.get(num) and r.get(den))))
        print(f"{d}: {len(rs)} layers; padded best after / before {g('best_after_ms', 'best_before_ms'):.3f}; "
              f"after / cuDNN {g('best_after_ms', 'cudnn_ms'):.3f}, before / cuDNN {g('best_before_ms', 'cudnn_ms'):.3f}; "
              f"after / cp.async default {g('best_after_ms', 'cp_async_ms'):.3f}, before / cp.async default "
              f"{g('best_before_ms', 'cp_async_ms'):.3f}", flush=True)


if __name__ == "__main__":
    main()
