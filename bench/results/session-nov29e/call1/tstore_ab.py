"""Session nov29e, call 1: the forward's copy-engine stores (ConvImplicitGemmHopperFwdTmaStore) against the forward
kernel's own stores (ConvImplicitGemmHopperFwd) at the same persistent copy-engine tiles, per layer, on one Harness
(same buffers, every candidate verified against the float64 reference first), beside cuDNN's plans and the other own
solvers at their find configs and their shipped-DB configs. Isolated kernel time (bench/kernel_timing.py) and back to
back in a CUDA graph ("gpu"). The tiles: the find configs of the new solver (the forward's default and alternates), the
forward's shipped-DB config where it is a persistent copy-engine one, and those at STAGES 3..8 where valid.
As run in call 1, when the solver had no OBUF tunable (one output tile); it does not run at later code (call2/).

    python tstore_ab.py --set resnet50 --dtype FP16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import kernel_timing  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="resnet50", choices=("resnet50", "nonresnet"))
    ap.add_argument("--dtype", default="FP16")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--deadline", type=float, default=1e9)
    ap.add_argument("--db", default=str(ROOT / "finddb" / "sm_90-132.sqlite"))
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile
    from shapes import NON_RESNET, _resnet50

    t_start = time.time()
    dev = current_device()
    layers = _resnet50(32) if a.set == "resnet50" else {k: dict(v, n=32) for k, v in NON_RESNET.items()}
    ts, fwd, cud = (get_solver(s) for s in ("ConvImplicitGemmHopperFwdTmaStore", "ConvImplicitGemmHopperFwd",
                                             "ConvCudnnFwd"))
    others = [get_solver(s) for s in ("GemmFwd1x1_0_1", "ConvImplicitGemmHopperFwdSwap", "ConvImplicitGemmSmallCFwd")]
    dbc = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)

    def db_config(p, sid):
        row = dbc.execute("select config from find_records where problem_key=? and solver_id=? and verified=1",
                          (p.key(), sid)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    cases, todo = [], []
    for name, kw in layers.items():
        if a.set == "resnet50" and not name.startswith("r50_"):
            continue
        p = ProblemDescription.make("F", layout="NHWC", dtype=a.dtype, **kw)
        own = {}
        for o in [fwd, *others]:
            if not o.applicability(p):
                continue
            oc = [o.default_config(p)] + [c for c in o.find_configs(p) if c is not None]
            d = db_config(p, o.id)
            if d is not None and o.is_valid_config(p, d):
                oc.append(o.legacy_config(d) if hasattr(o, "legacy_config") else d)
            own[o.id] = [c for i, c in enumerate(oc) if c not in oc[:i]]
        tiles = []
        if ts.applicability(p):
            tiles = [ts.default_config(p)] + [c for c in ts.find_configs(p) if c is not None]
            d = db_config(p, fwd.id)
            d = fwd.legacy_config(d) if d else None
            if d and ts.is_valid_config(p, d):
                tiles.append(d)
            tiles += [dict(c, STAGES=s) for c in list(tiles) for s in range(3, 9) if ts.is_valid_config(p, dict(c, STAGES=s))]
            tiles = [c for i, c in enumerate(tiles) if c not in tiles[:i]]
        for sid, cs in own.items():
            for c in cs:
                todo += get_solver(sid).get_solution(p, c).kernels
        for c in tiles:
            todo += ts.get_solution(p, c).kernels + fwd.get_solution(p, c).kernels
        cases.append((name, p, own, tiles))
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} kernels in {time.time() - t0:.1f} s; errors: {len(errs) if errs else 'none'}", flush=True)

    timings = lambda call, inv, ws: {"isolated_ms": kernel_timing.isolated_ms(call, a.iters),  # noqa: E731
                                     "gpu_ms": kernel_timing.graph_ms(call, a.iters)}
    rows = []
    for name, p, own, tiles in cases:
        if time.time() - t_start > a.deadline:
            print(f"deadline: stopped before {name}", flush=True)
            break
        h = Harness(p, verify=True, seed=0)
        row = {"layer": name, "key": p.key(), "cudnn": [], "own": {}, "tstore": [], "fwd_tiles": []}
        got = kernel_timing.timed_configs(h, p, cud, None, "cudnn", timings)
        row["cudnn"] = [{"cfg": c, **t} for c, t in got]
        for sid, cs in own.items():
            s = get_solver(sid)
            row["own"][sid] = [{"cfg": c, **t} for c, t in kernel_timing.timed_configs(h, p, s, cs, s.family, timings)]
        # the same tiles, the two epilogues interleaved tile by tile
        for c in tiles:
            for key, s in (("fwd_tiles", fwd), ("tstore", ts)):
                row[key] += [{"cfg": cc, **t} for cc, t in kernel_timing.timed_configs(h, p, s, [c], s.family, timings)]
        rows.append(row)
        cb = min((r["isolated_ms"] for r in row["cudnn"]), default=math.nan)
        best = lambda rs, m="isolated_ms": min((r[m] for r in rs), default=math.inf)  # noqa: E731
        own_b = min([best(rs) for rs in row["own"].values()] + [best(row["fwd_tiles"])])
        print(f"{name}: cuDNN {cb * 1e3:.1f} us; own before {own_b / cb:.3f}, tstore best {best(row['tstore']) / cb:.3f}"
              f" ({len(row['tstore'])} tiles), same tiles fwd/tstore "
              + " ".join(f"{f['isolated_ms'] / t['isolated_ms']:.2f}" for f, t in zip(row["fwd_tiles"], row["tstore"])),
              flush=True)
        del h
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": rows, "device": dev.name, "command": " ".join(sys.argv)}, indent=1))

    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan  # noqa: E731
    for m in ("isolated_ms", "gpu_ms"):
        before, after, pair = [], [], []
        for row in rows:
            if not row["cudnn"]:
                continue
            cb = min(r[m] for r in row["cudnn"])
            ob = min([min((r[m] for r in rs), default=math.inf) for rs in row["own"].values()]
                     + [min((r[m] for r in row["fwd_tiles"]), default=math.inf)])
            tb = min((r[m] for r in row["tstore"]), default=math.inf)
            before.append(ob / cb)
            after.append(min(ob, tb) / cb)
            pair += [t[m] / f[m] for f, t in zip(row["fwd_tiles"], row["tstore"]) if f["cfg"] == t["cfg"]]
        print(f"{m[:-3]}: own best / cuDNN's best {g(before):.3f} -> {g(after):.3f} with the copy-engine stores "
              f"({len(before)} layers); tstore / fwd at the same tile {g(pair):.3f} over {len(pair)} pairs")


if __name__ == "__main__":
    main()
