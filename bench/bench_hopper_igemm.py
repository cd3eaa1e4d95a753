"""Hopper implicit GEMM (issue 19) against the Ampere implicit GEMM and cuDNN's best plan, FP16 NHWC:
ResNet-50's applicable layers at N=32 (``--dirs F,B,W``: forward, backward data, backward weights) and
the large forward layer -n 120 -c 64 -H 512 -W 512 -k 64 3x3.

Every solution runs through miofind's prepared path on the same buffers and is timed with CUDA events
(3 warm-ups, median of 20). The Hopper solver runs its default config and a few alternatives (the best
is reported with its config); cuDNN runs the plan miofind's find picks. The Hopper output is checked
against cuDNN's (relative L2). Prints a table per direction; ``--json`` writes the rows."""

from __future__ import annotations

import argparse
import json
import math
import time

ALTS = tuple({"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": 1, "WSPEC": 0} for bm, bn, wgs, st, per in (
    (128, 64, 2, 4, 0), (128, 64, 2, 3, 0), (256, 64, 2, 4, 0), (128, 128, 2, 3, 0), (128, 128, 2, 4, 0),
    (128, 256, 2, 3, 0), (64, 128, 1, 4, 0), (64, 64, 1, 4, 0), (128, 128, 1, 3, 0),
    (128, 64, 2, 8, 1), (128, 64, 2, 6, 1), (128, 64, 2, 4, 1), (64, 64, 1, 8, 1), (128, 128, 2, 4, 1),
    (64, 128, 1, 6, 1), (256, 64, 2, 3, 1)))
# F and B split-K alternatives on small grids: these tiles at splits 2, 3, 4, 6 and the tile's default split,
# half and twice it (implicit_gemm_hopper_base.default_split)
SPLIT_TILES = ((128, 64, 2, 4), (128, 128, 2, 3), (64, 64, 1, 4), (64, 128, 1, 4))
SPLITS = (2, 3, 4, 6)

SOLVERS = {  # direction: (cuDNN, Ampere implicit GEMM, Hopper)
    "F": ("ConvCudnnFwd", "ConvImplicitGemmFwd", "ConvImplicitGemmHopperFwd"),
    "B": ("ConvCudnnBwd", "ConvImplicitGemmBwd", "ConvImplicitGemmHopperBwd"),
    "W": ("ConvCudnnWrw", "ConvImplicitGemmWrw", "ConvImplicitGemmHopperWrw"),
}


def alt_configs(hop, p, wspec=True):
    """Alternative configs timed with --alts: the forward list (F and B, B through the forward view of its largest stride phase) and,
    where the grid of a split tile is small, its split variants, each also with the producer warpgroup
    (WSPEC = 1) unless ``wspec`` is false; for W, a few tiles at the default split,
    half and twice it, unsplit, and split over clusters of 2 and 4 blocks, each also with the producer
    warpgroup (WSPEC = 1)."""
    if p.direction != "W":
        from miofind.solvers import implicit_gemm_hopper_base as hb
        pf = hop.forward_problem(p)           # B: the forward view of its largest stride phase
        d = hop.default_config(p)
        out = [c for c in ALTS if c != d and hop.is_valid_config(p, c)]
        for bm, bn, wgs, st in SPLIT_TILES:
            base = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 0, "SPLITK": 1, "WSPEC": 0}
            if not hop.is_valid_config(p, base) or not hb.small_grid(pf, base):
                continue
            ds = hb.default_split(pf, base)
            effs = {hb.split_geometry(pf, c["SPLITK"])[0] for c in out if {**c, "SPLITK": 1} == base}
            for s in (*SPLITS, ds, max(1, ds // 2), 2 * ds):
                c = dict(base, SPLITK=s)
                eff = hb.split_geometry(pf, s)[0]
                if c != d and eff not in effs and hop.is_valid_config(p, c):
                    effs.add(eff)
                    out.append(c)
        if wspec:                                  # each of them (and the default) with the producer warpgroup
            for c in [d, *out]:
                c = dict(c, WSPEC=1)
                if c not in out and hop.is_valid_config(p, c):
                    out.append(c)
        return out
    from miofind.solvers.implicit_gemm_hopper_wrw import default_split
    d = hop.default_config(p)
    out = []
    for bm, bn, wgs in ((64, 128, 1), (64, 256, 1), (128, 128, 2), (128, 256, 2), (256, 128, 2)):
        for st in (3, 5):
            base = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": 1}
            sk = default_split(p, base)
            for s in (sk, max(1, sk // 2), 2 * sk):
                c = dict(base, SPLITK=s, CLUSTER=1)
                if c != d and c not in out and hop.is_valid_config(p, c):
                    out.append(c)
            for cl in (2, 4):                      # the cluster split (no workspace, no reduce launch)
                c = dict(base, SPLITK=1, CLUSTER=cl)
                if c not in out and hop.is_valid_config(p, c):
                    out.append(c)
    # each of them (and the default) with the producer warpgroup as well
    for c in [d, *out]:
        c = dict(c, CLUSTER=c.get("CLUSTER", 1), WSPEC=1)
        if c not in out and hop.is_valid_config(p, c):
            out.append(c)
    return out


def layer_set(which: str):
    """(name, count in the network, ProblemDescription keywords without n) of a layer set."""
    if which in ("nonresnet", "padded"):
        import os
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
        from shapes import NON_RESNET, PADDED_C
        return [(name, 1, kw) for name, kw in (NON_RESNET if which == "nonresnet" else PADDED_C).items()]
    from miofind.models import model_layers
    return [(f"{la.c}->{la.k} @{la.in_size[0]} {la.filter_size[0]}x{la.filter_size[1]}/{la.strides[0]}", la.count,
             dict(c=la.c, k=la.k, in_size=la.in_size, filter_size=la.filter_size, pads=la.pads, strides=la.strides))
            for la in model_layers("resnet50")]


def timed(fn, iters=20, warm=3):
    import cupy
    for _ in range(warm):
        fn()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(iters):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(s, e))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    import cupy

    from miofind.api import find_solutions
    from miofind.device import current_device
    from miofind.invokers import prepare
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile, solution_kernels
    from miofind.verify import rel_error

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--large", action="store_true", help="also the large layer")
    ap.add_argument("--only-large", action="store_true")
    ap.add_argument("--alts", action="store_true", help="time the alternative configs too")
    ap.add_argument("--deadline", type=float, default=1e9, help="stop starting layers after this many seconds")
    ap.add_argument("--dirs", default="F", help="directions, e.g. F,B,W")
    ap.add_argument("--set", choices=("resnet50", "nonresnet"), default="resnet50",
                    help="ResNet-50's layers, or tests/shapes.py's NON_RESNET (Inception, VGG, DenseNet)")
    ap.add_argument("--json")
    args = ap.parse_args()
    t_start = time.time()
    dev = current_device()
    dirs = [d for d in args.dirs.replace(",", "") if d in SOLVERS]
    probs = []
    if args.large or args.only_large:
        probs.append(("large 64->64 @512 3x3 n120", 1, ProblemDescription.make(
            "F", n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1, layout="NHWC", dtype="FP16")))
    if not args.only_large:
        for d in dirs:
            for name, count, kw in layer_set(args.set):
                p = ProblemDescription.make(d, n=args.n, layout="NHWC", dtype="FP16", **kw)
                if d != "F" and not get_solver(SOLVERS[d][2]).applicability(p):
                    continue
                probs.append((f"{d} {name}", count, p))
    # compile every Hopper config of every layer up front, in parallel
    todo = []
    for _, _, p in probs:
        hop = get_solver(SOLVERS[p.direction][2])
        if hop.applicability(p):
            cfgs = [None] + (alt_configs(hop, p) if args.alts else [])
            todo += solution_kernels(p, hop, cfgs)
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} Hopper kernels in {time.time() - t0:.1f} s; errors: {errs or 'none'}", flush=True)
    rows = []
    for name, count, p in probs:
        if time.time() - t_start > args.deadline:
            print(f"deadline: skipping {name}", flush=True)
            continue
        s_cudnn, s_amp, s_hop = SOLVERS[p.direction]
        hop = get_solver(s_hop)
        rng = cupy.random.default_rng(1)
        sa, sb, so = p.io_shapes()
        x = rng.uniform(-1, 1, sa, dtype=cupy.float32).astype(cupy.float16)
        w = rng.uniform(-1, 1, sb, dtype=cupy.float32).astype(cupy.float16)
        y_ref, y = cupy.empty(so, cupy.float16), cupy.empty(so, cupy.float16)
        flop = 2 * p.n * math.prod(p.out_size) * p.k * p.c * math.prod(p.filter_size)
        row = {"layer": name, "dir": p.direction, "count": count, "key": p.key()}
        res = find_solutions(p, solvers=[s_cudnn], mode="benchmark", store=False, verify=False)
        # a find whose float64 reference does not fit the GPU (the large layer) keeps no plan: then
        # cuDNN's heuristic first plan, unverified against the reference
        plan = res[0].config if res else None
        try:
            pc = prepare(p, s_cudnn, plan)
            row["cudnn_ms"] = timed(lambda: pc(x, w, y_ref))
            row["cudnn_plan"] = plan or "heuristic first plan"
            res = True
        except Exception as e:
            print(f"cuDNN failed on {name}: {e}", flush=True)
            res = False
        pa = prepare(p, s_amp, None)
        row["ampere_ms"] = timed(lambda: pa(x, w, y))
        if not res:
            y_ref[...] = y
        if hop.applicability(p):
            best = None
            for cfg in [None] + (alt_configs(hop, p) if args.alts else []):
                ph = prepare(p, hop.id, cfg)
                y.fill(cupy.nan)
                ph(x, w, y)
                err = float(rel_error(y.astype(cupy.float64), y_ref.astype(cupy.float64)))
                ms = timed(lambda: ph(x, w, y))
                tag = cfg or hop.default_config(p)
                row.setdefault("hopper_all", []).append({"config": tag, "ms": ms, "err": err})
                if best is None or ms < best[0]:
                    best = (ms, tag, err)
            row["hopper_default_ms"] = row["hopper_all"][0]["ms"]
            row["hopper_ms"], row["hopper_config"], row["hopper_err"] = best
        row["tflop"] = flop / 1e12
        rows.append(row)
        print(json.dumps(row), flush=True)
        del x, w, y, y_ref
        cupy.get_default_memory_pool().free_all_blocks()
    # table, one per direction
    for d in sorted({r["dir"] for r in rows}, key="FBW".index):
        print(f"\n{dev.name}: FP16 NHWC {d}, ms (TFLOP/s); ratio = own / cuDNN")
        print(f"{'layer':30s} {'cuDNN':>15s} {'Ampere igemm':>15s} {'Hopper dflt':>15s} {'Hopper best':>15s} "
              f"{'H/cuDNN':>7s} {'A/cuDNN':>7s} err  best config")
        lg = {"h": [], "hd": [], "a": [], "own": []}
        for r in (r for r in rows if r["dir"] == d):
            f = lambda k: f"{r[k]:7.3f} ({r['tflop'] / r[k] * 1e3:5.0f})" if k in r else f"{'-':>15s}"
            hr = r["hopper_ms"] / r["cudnn_ms"] if "hopper_ms" in r and "cudnn_ms" in r else None
            ar = r["ampere_ms"] / r["cudnn_ms"] if "cudnn_ms" in r else None
            if hr and "large" not in r["layer"]:
                lg["h"].append(math.log(hr)); lg["a"].append(math.log(ar))
                lg["hd"].append(math.log(r["hopper_default_ms"] / r["cudnn_ms"]))
                lg["own"].append(math.log(min(hr, ar)))
            print(f"{r['layer']:30s} {f('cudnn_ms')} {f('ampere_ms')} {f('hopper_default_ms')} {f('hopper_ms')} "
                  f"{hr or 0:7.2f} {ar or 0:7.2f} {r.get('hopper_err', 0):.1e} {r.get('hopper_config', '')}")
        for k, lab in (("hd", "Hopper default"), ("h", "Hopper best of configs"), ("own", "own best (Hopper or Ampere)"),
                       ("a", "Ampere igemm")):
            if lg[k]:
                print(f"{d} geomean {lab} / cuDNN over {len(lg[k])} {args.set} layers (unweighted): "
                      f"{math.exp(sum(lg[k]) / len(lg[k])):.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": dev.name, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
