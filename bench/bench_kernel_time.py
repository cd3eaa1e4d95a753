"""Our Hopper kernels against cuDNN's plans, timed four ways (bench/kernel_timing.py): isolated, gpu, eager and
find. The find's own timing charged each call's host time before its kernel starts (``MIOFIND_FIND_TIMING=wall``,
its only timing before 2026-11-26; the default ``device`` times the call's GPU work); the other three do not, or
only where the host is the bottleneck. This benchmark says how much of a same-run ratio is kernel time.

Per layer and direction (FP16/BF16 NHWC, ResNet-50's layers at N=32 or tests/shapes.py's NON_RESNET), on one
Harness (same buffers; every candidate verified against the float64 reference first):
  ours   the Hopper solver of the direction at its default config, the shipped DB's tuned config for the
         layer where there is one, with ``--alts`` bench_hopper_igemm's alternative configs, and with
         ``--find-configs`` the other configs a find of the layer measures (the solver's find_configs);
  cudnn  every plan cuDNN's heuristics offer (up to MIOFIND_CUDNN_PLANS).
  tma    with ``--tma``: each of ours' configs with the copy-engine loads (WSPEC = 1, TMA = 1, PERSIST = 0) where
         valid, a side of its own; "ours" stays the configs without TMA, and "best" is the faster of the two.
  ptma   with ``--persist`` (F): persistent copy-engine configs (PERSIST = 1, TMA = 1): each unsplit "tma" config
         made persistent, and PERSIST_TILES at 3 and 4 stages, where valid; "best" is then the fastest of the three.
For each timing, each side's fastest candidate under that timing; the geomean of ours / cudnn per direction.
``--set large``: issue 19's large layer (N=120, 64 -> 64 channels, 512 x 512, 3x3). ``--set padded``: tests/shapes.py's
PADDED_C (real layers whose C is not a multiple of 64; with ``--find-configs`` the forward's padded copy-engine
alternates come in as "ptma"). ``--tstore`` (F): a side "tstore", the copy-engine-store forward's default and
alternates, which "best" then includes. ``--cp-async-default``: where the default loads by the copy engine, also the
default tile without it ("ours": the baseline a padded default replaced).
``--pdl-ab``: a side "plain": every config of ours again, its invokers bound with MIOFIND_PDL=0 (each launch a plain
one; the other sides run with programmatic dependent launches, the default), and the geomeans of best / plain.

    python bench/bench_kernel_time.py --dirs F,B,W --dtypes FP16 [--set nonresnet] [--alts] [--tma [--persist]] --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import kernel_timing  # noqa: E402

HOPPER = {"F": "ConvImplicitGemmHopperFwd", "B": "ConvImplicitGemmHopperBwd", "W": "ConvImplicitGemmHopperWrw"}
CUDNN = {"F": "ConvCudnnFwd", "B": "ConvCudnnBwd", "W": "ConvCudnnWrw"}
MODES = ("isolated", "gpu", "eager", "find")
PERSIST_TILES = ((128, 64, 2), (256, 64, 2), (128, 128, 2), (128, 256, 2), (64, 128, 1), (64, 256, 1))


def tuned_config(key: str, sid: str):
    db = sqlite3.connect(f"file:{ROOT / 'finddb' / 'sm_90-132.sqlite'}?mode=ro", uri=True)
    row = db.execute("select config from perf_records where problem_key=? and solver_id=?", (key, sid)).fetchone()
    return json.loads(row[0]) if row and row[0] else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="resnet50", choices=("resnet50", "nonresnet", "large", "padded"))
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--dirs", default="F,B,W")
    ap.add_argument("--dtypes", default="FP16")
    ap.add_argument("--alts", action="store_true")
    ap.add_argument("--find-configs", action="store_true", help="also the solver's find_configs (a find's alternatives)")
    ap.add_argument("--tma", action="store_true")
    ap.add_argument("--persist", action="store_true")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--deadline", type=float, default=1e9)
    ap.add_argument("--pdl-ab", action="store_true")
    ap.add_argument("--tstore", action="store_true")
    ap.add_argument("--cp-async-default", action="store_true",
                    help="also the default tile without the copy engine (default_tile(copy_engine=False)) where the "
                         "default is a copy-engine one: the cp.async baseline of a padded default")
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    import cupy

    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile
    from shapes import NON_RESNET, PADDED_C, _resnet50

    t_start = time.time()
    dev = current_device()
    if a.set == "large":
        layers = {"large_64_512_3x3": dict(n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1)}
    else:
        layers = _resnet50(a.n) if a.set == "resnet50" else {
            k: dict(v, n=a.n) for k, v in (PADDED_C if a.set == "padded" else NON_RESNET).items()}
    cases, todo = [], []
    for d in a.dirs.split(","):
        hop = get_solver(HOPPER[d])
        for dt in a.dtypes.split(","):
            for name, kw in layers.items():
                p = ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)
                if not hop.applicability(p):
                    continue
                cfgs = [hop.default_config(p)]
                if a.cp_async_default and cfgs[0].get("TMA"):
                    from miofind.solvers.implicit_gemm_hopper_base import default_tile
                    cp = default_tile(hop.forward_problem(p), copy_engine=False)
                    if hop.is_valid_config(p, cp):
                        cfgs.append(cp)
                t = tuned_config(p.key(), hop.id)
                if t and hop.is_valid_config(p, t) and hop.legacy_config(t) not in cfgs:
                    cfgs.append(hop.legacy_config(t))
                if a.alts:
                    from bench_hopper_igemm import alt_configs
                    cfgs += [c for c in alt_configs(hop, p) if c not in cfgs]
                if a.find_configs:
                    cfgs += [c for c in hop.find_configs(p) if c and c not in cfgs]
                if a.tma:
                    for c in list(cfgs):
                        v = dict(c, WSPEC=1, TMA=1, **({"PERSIST": 0} if "PERSIST" in c else {}))
                        if hop.is_valid_config(p, v) and v not in cfgs:
                            cfgs.append(v)
                if a.persist and "PERSIST" in cfgs[0]:
                    base = [c for c in cfgs if c.get("TMA") and c["SPLITK"] == 1]
                    base += [{"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 0, "SPLITK": 1, "WSPEC": 1, "TMA": 1}
                             for bm, bn, wgs in PERSIST_TILES for st in (3, 4)]
                    for c in base:
                        v = dict(c, PERSIST=1)
                        if hop.is_valid_config(p, v) and v not in cfgs:
                            cfgs.append(v)
                ts = get_solver("ConvImplicitGemmHopperFwdTmaStore")
                tcfgs = [ts.default_config(p)] + ts.alternatives(p) if a.tstore and d == "F" and ts.applicability(p) \
                    else []
                cases.append((name, p, hop, cfgs, tcfgs))
                for c in cfgs:
                    todo += hop.get_solution(p, c).kernels
                for c in tcfgs:
                    todo += ts.get_solution(p, c).kernels
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} kernels in {time.time() - t0:.1f} s; errors: {errs or 'none'}", flush=True)

    rows = []
    for name, p, hop, cfgs, tcfgs in cases:
        if time.time() - t_start > a.deadline:
            print(f"deadline: stopped before {name} {p.direction}", flush=True)
            break
        cud = get_solver(CUDNN[p.direction])
        h = Harness(p, verify=True, seed=0)
        row = {"layer": name, "key": p.key(), "direction": p.direction, "dtype": p.dtype}
        sides = (("ours", hop, [c for c in cfgs if not c.get("TMA")], "implicit_gemm_hopper"),
                 ("tma", hop, [c for c in cfgs if c.get("TMA") and not c.get("PERSIST")], "implicit_gemm_hopper"),
                 ("ptma", hop, [c for c in cfgs if c.get("TMA") and c.get("PERSIST")], "implicit_gemm_hopper"),
                 ("cudnn", cud, None, "cudnn")) \
            + ((("plain", hop, cfgs, "implicit_gemm_hopper"),) if a.pdl_ab else ()) \
            + ((("tstore", get_solver("ConvImplicitGemmHopperFwdTmaStore"), tcfgs, "implicit_gemm_hopper"),) if tcfgs
               else ())
        timings = lambda call, inv, ws: {  # noqa: E731
            "isolated": kernel_timing.isolated_ms(call, a.iters), "gpu": kernel_timing.graph_ms(call, a.iters),
            "eager": kernel_timing.queued_ms(call, a.iters), "find": h.time(inv, ws, warmup=3, iters=a.iters)[0]}
        for side, solver, configs, fam in sides:
            best = {}
            if side == "plain":
                os.environ["MIOFIND_PDL"] = "0"     # read when each invoker's launches are first bound
            try:
                for cfg, t in kernel_timing.timed_configs(h, p, solver, configs, fam, timings):
                    for m in MODES:
                        if m not in best or t[m] < best[m][0]:
                            best[m] = (t[m], cfg)
            finally:
                os.environ.pop("MIOFIND_PDL", None)
            for m, (ms, cfg) in best.items():
                row[f"{side}_{m}_ms"] = ms
                row[f"{side}_{m}_cfg"] = cfg
        for m in MODES:
            got = [(row[f"{sd}_{m}_ms"], row[f"{sd}_{m}_cfg"]) for sd in ("ours", "tma", "ptma", "tstore")
                   if f"{sd}_{m}_ms" in row]
            if got:
                row[f"best_{m}_ms"], row[f"best_{m}_cfg"] = min(got, key=lambda t: t[0])
        rows.append(row)
        f = lambda s, m: f"{row[f'{s}_{m}_ms'] * 1e3:7.1f}" if f"{s}_{m}_ms" in row else "      -"  # noqa: E731
        pl = a.pdl_ab
        tsd = bool(tcfgs)
        print(f"{name:28s} {p.direction} {p.dtype} " + "  ".join(f"{m} {f('ours', m)} {f('tma', m)} {f('ptma', m)} "
                                                                 f"{f('cudnn', m)}" + (f" {f('plain', m)}" if pl else "")
                                                                 + (f" {f('tstore', m)}" if tsd else "")
                                                                 for m in MODES)
              + f" us (ours tma ptma cudnn{' plain' if pl else ''}{' tstore' if tsd else ''})", flush=True)
        del h
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": rows, "device": dev.name}, indent=1))

    def geomeans(title: str, num: str, den: str) -> None:
        """Per direction and data type, the geomean over layers of side ``num``'s time / side ``den``'s, each mode."""
        print(f"\ngeomean {title} (layers)")
        for d in a.dirs.split(","):
            for dt in a.dtypes.split(","):
                out = [f"{d} {dt}:"]
                for m in MODES:
                    v = [math.log(r[f"{num}_{m}_ms"] / r[f"{den}_{m}_ms"]) for r in rows if r["direction"] == d
                         and r["dtype"] == dt and f"{num}_{m}_ms" in r and f"{den}_{m}_ms" in r]
                    out.append(f"{m} {math.exp(sum(v) / len(v)):.3f} ({len(v)})" if v else f"{m} -")
                print("  ".join(out))

    sides = ("ours", "tma", "ptma", "best") if a.persist else ("ours", "tma", "best") if a.tma else ("ours",)
    if a.set == "padded" or a.tstore:
        sides = tuple(dict.fromkeys(("ours", "ptma") + sides + (("tstore",) if a.tstore else ()) + ("best",)))
    for side in sides + (("plain",) if a.pdl_ab else ()):
        geomeans(f"{side} / cudnn", side, "cudnn")
    if a.pdl_ab:
        # the best of ours with programmatic dependent launches against the same configs launched plainly
        geomeans("best / plain", "best", "plain")

if __name__ == "__main__":
    main()
