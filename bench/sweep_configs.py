"""Every config of one Hopper solver's space on chosen layers, timed beside cuDNN's plans (bench/kernel_timing.py):
what the best config of today's space reaches, per layer, before a kernel change is planned.

Per layer (FP16 NHWC by default, ``--layout NCHW`` channels-first, ``--dtype FP32 --math tf32`` for TF32; ResNet-50 at
N=32, tests/shapes.py's NON_RESNET or PADDED_C (``--set padded``), or ``--set large``: issue 19's large layer at N=120),
on one Harness (same buffers, every candidate verified against the float64 reference first): the configs of
``config_space`` that match ``--where`` (e.g. ``TMA=1,STAGES=4|6``), each timed isolated and back to back in a graph
("gpu"); cuDNN's offered plans the same way. Prints each layer's five fastest configs by isolated time and the geomean
of best / cuDNN's best. ``--solver`` sweeps another solver of the direction; ``--others`` also times other solvers, each
at its find's configs and at the config of its record in ``--db`` (a FindDB file, e.g. the shipped one), in the same
run.

    python bench/sweep_configs.py --dir W --layers r50_2048to512_7_1x1s1,... --where TMA=1 --json out.json
    python bench/sweep_configs.py --dir W --solver ConvImplicitGemmHopperWrwStreamK --layers all \
        --others ConvImplicitGemmHopperWrw --db finddb/sm_90-132.sqlite
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import kernel_timing  # noqa: E402
from bench_kernel_time import CUDNN, HOPPER  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="W")
    ap.add_argument("--dtype", default="FP16")
    ap.add_argument("--set", default="resnet50", choices=("resnet50", "nonresnet", "padded", "large", "vgg16", "unet"),
                    help="ResNet-50's layers at N=32, tests/shapes.py's NON_RESNET or PADDED_C at N=32, issue 19's "
                         "large layer, or "
                         "a preset's (miofind.models) unique layers of the direction at N=32, named by problem key")
    ap.add_argument("--layout", default="NHWC", choices=("NHWC", "NCHW"),
                    help="NCHW: channels-first tensors (the Hopper solvers' NCHW wrappers, cuDNN's NCHW plans)")
    ap.add_argument("--math", default="strict", choices=("strict", "tf32"), help="tf32: FP32 data with TF32 math")
    ap.add_argument("--layers", required=True, help="comma-separated layer names, or all")
    ap.add_argument("--solver", default="", help="the solver whose space is swept (default: the direction's Hopper one)")
    ap.add_argument("--others", default="", help="comma-separated solver ids timed at their find configs and DB config")
    ap.add_argument("--db", default="", help="FindDB file whose records' configs --others also time")
    ap.add_argument("--vary", default="", help="KEY=V[,KEY=V]: --others' configs also timed with these values, where valid")
    ap.add_argument("--where", default="")
    ap.add_argument("--extra", default="", help="a JSON list of further configs to time where valid")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--reps", type=int, default=1,
                    help="time every candidate of a layer this many times, in interleaved passes after all of them are "
                         "built and verified; each figure is the median of its passes (the passes are kept as lists)")
    ap.add_argument("--deadline", type=float, default=1e9)
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile
    from miofind.tuning.tuner import matches_where, parse_where
    from shapes import NON_RESNET, PADDED_C, _resnet50

    t_start = time.time()
    dev = current_device()
    preset = {}
    if a.set in ("vgg16", "unet"):
        from miofind.models import model_problems
        preset = {p.key(): p for p in model_problems(a.set, batch=32, dtypes=(a.dtype,), layouts=(a.layout,),
                                                      directions=a.dir, tf32=a.math == "tf32")}
        layers = dict.fromkeys(preset)
    elif a.set == "large":
        layers = {"large_64_512_3x3": dict(n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1)}
    else:
        layers = _resnet50(32) if a.set == "resnet50" else {
            k: dict(v, n=32) for k, v in (PADDED_C if a.set == "padded" else NON_RESNET).items()}
    hop, cud = get_solver(a.solver or HOPPER[a.dir]), get_solver(CUDNN[a.dir])
    others = [get_solver(s) for s in filter(None, a.others.split(","))]
    names = [k for k in layers if k.startswith("r50_") or a.set != "resnet50"] if a.layers == "all" else a.layers.split(",")

    vary = {k: int(v) for k, v in (kv.split("=") for kv in filter(None, a.vary.split(",")))}
    dbc = None
    if a.db:
        import sqlite3
        dbc = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)

    def db_config(p, sid):
        if dbc is None:
            return None
        row = dbc.execute("select config from find_records where problem_key=? and solver_id=? and verified=1",
                          (p.key(), sid)).fetchone()
        return json.loads(row[0]) if row and row[0] else None
    where = parse_where(a.where) if a.where else {}
    extra = json.loads(a.extra) if a.extra else []
    cases, todo = [], []
    for name in names:
        p = preset.get(name) or ProblemDescription.make(a.dir, layout=a.layout, dtype=a.dtype, math=a.math, **layers[name])
        if not hop.applicability(p):
            print(f"{name}: {hop.id} not applicable: {hop.applicability(p).reason}", flush=True)
            continue
        ocfgs = {}
        for o in others:
            if not o.applicability(p):      # e.g. a GEMM solver on a layer it does not apply to
                ocfgs[o.id] = []
                continue
            oc = [c for c in o.find_configs(p) if c is not None] + [o.default_config(p)]
            d = db_config(p, o.id)
            if d is not None and o.is_valid_config(p, d):
                oc.append(o.legacy_config(d) if hasattr(o, "legacy_config") else d)   # Hopper: stored configs' defaults
            if vary:
                oc += [dict(c, **vary) for c in oc if o.is_valid_config(p, dict(c, **vary))]
            ocfgs[o.id] = [c for i, c in enumerate(oc) if c not in oc[:i]]
            for c in ocfgs[o.id]:
                todo += o.get_solution(p, c).kernels
        cfgs = [hop.default_config(p)]
        cfgs += [c for c in hop.config_space(p) if matches_where(c, where) and c not in cfgs]
        cfgs += [c for c in extra if hop.is_valid_config(p, c) and c not in cfgs]
        cases.append((name, p, cfgs, ocfgs))
        for c in cfgs:
            todo += hop.get_solution(p, c).kernels
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} kernels in {time.time() - t0:.1f} s; errors: {len(errs) if errs else 'none'}", flush=True)

    rows = []
    for name, p, cfgs, ocfgs in cases:
        if time.time() - t_start > a.deadline:
            print(f"deadline: stopped before {name}", flush=True)
            break
        h = Harness(p, verify=True, seed=0)
        row = {"layer": name, "key": p.key(), "ours": [], "cudnn": [], "others": {}}
        timings = lambda call, inv, ws: {"call": call, "ws": ws}  # noqa: E731   (ws kept alive for the passes)
        for side, solver, configs, fam in (("ours", hop, cfgs, "implicit_gemm_hopper"), ("cudnn", cud, None, "cudnn")):
            got = kernel_timing.timed_configs(h, p, solver, configs, fam, timings, stop_at=t_start + a.deadline)
            row[side] = [{"cfg": c, **t} for c, t in got]
        for o in others:
            got = kernel_timing.timed_configs(h, p, o, ocfgs[o.id], o.family, timings, stop_at=t_start + a.deadline)
            row["others"][o.id] = [{"cfg": c, **t} for c, t in got]
        entries = row["ours"] + row["cudnn"] + [e for rs in row["others"].values() for e in rs]
        for _ in range(a.reps):       # interleaved passes: a drift of the clocks during the layer spreads over all
            for e in entries:
                e.setdefault("isolated_passes", []).append(kernel_timing.isolated_ms(e["call"], a.iters))
                e.setdefault("gpu_passes", []).append(kernel_timing.graph_ms(e["call"], a.iters))
        for e in entries:
            del e["call"], e["ws"]
            for m in ("isolated", "gpu"):
                e[f"{m}_ms"] = statistics.median(e[f"{m}_passes"])
        rows.append(row)
        if row["ours"] and row["cudnn"]:
            cb = min(r["isolated_ms"] for r in row["cudnn"])
            cg = min(r["gpu_ms"] for r in row["cudnn"])
            dflt = row["ours"][0] if row["ours"][0]["cfg"] == hop.default_config(p) else None
            print(f"\n{name}: cuDNN isolated {cb * 1e3:.1f} us, gpu {cg * 1e3:.1f} us; {len(row['ours'])} configs"
                  + (f"; default {dflt['isolated_ms'] / cb:.3f} / {dflt['gpu_ms'] / cg:.3f}" if dflt else ""), flush=True)
            for r in sorted(row["ours"], key=lambda r: r["isolated_ms"])[:5]:
                print(f"  {r['isolated_ms'] / cb:.3f} iso  {r['gpu_ms'] / cg:.3f} gpu  {r['cfg']}", flush=True)
            for oid, rs in row["others"].items():
                for r in sorted(rs, key=lambda r: r["isolated_ms"])[:3]:
                    print(f"  {oid}: {r['isolated_ms'] / cb:.3f} iso  {r['gpu_ms'] / cg:.3f} gpu  {r['cfg']}", flush=True)
        del h
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": rows, "device": dev.name}, indent=1))

    for m in ("isolated_ms", "gpu_ms"):
        v = [math.log(min(r[m] for r in row["ours"]) / min(r[m] for r in row["cudnn"])) for row in rows
             if row["ours"] and row["cudnn"]]
        if v:
            print(f"geomean best / cuDNN, {m[:-3]}: {math.exp(sum(v) / len(v)):.3f} ({len(v)} layers)")
        for o in others:
            both = [row for row in rows if row["ours"] and row["cudnn"] and row["others"].get(o.id)]
            if vary:     # the configs as found and stored, without the --vary twins
                plain = lambda c: any(c.get(k) != v for k, v in vary.items())  # noqa: E731
                sel = [row for row in both if any(plain(r["cfg"]) for r in row["others"][o.id])]
                v = [math.log(min(r[m] for r in row["others"][o.id] if plain(r["cfg"])) / min(r[m] for r in row["cudnn"]))
                     for row in sel]
                if v:
                    print(f"geomean {o.id} without {a.vary} / cuDNN, {m[:-3]}: {math.exp(sum(v) / len(v)):.3f} "
                          f"({len(v)} layers)")
            for label, pick in (("alone", lambda row: min(r[m] for r in row["others"][o.id])),
                                ("best of both", lambda row: min(min(r[m] for r in row["others"][o.id]),
                                                                 min(r[m] for r in row["ours"])))):
                v = [math.log(pick(row) / min(r[m] for r in row["cudnn"])) for row in both]
                if v:
                    print(f"geomean {o.id} {label} / cuDNN, {m[:-3]}: {math.exp(sum(v) / len(v)):.3f} ({len(v)} layers)")


if __name__ == "__main__":
    main()
