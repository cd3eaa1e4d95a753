"""Issue 19, session-epi call 1: how much of the Hopper forward's persistent copy-engine time is its per-tile
epilogue, and what two accumulator sets (ACC2: a tile's first wgmma issued before the previous tile's epilogue)
recover. Per ResNet-50 N=32 FP16 NHWC F layer (and with --set nonresnet tests/shapes.py's NON_RESNET), on one
Harness (same buffers):
  plain  every persistent copy-engine config (PERSIST_TILES x STAGES 3, 4, and 64x128/1 at 8 stages) as built;
  acc2   the same configs with ACC2=1 where it fits the registers (not where two 384-thread blocks share an SM);
  diag   the best plain config with the timing-only F_DIAG macro (fdiag.patch): 1 no epilogue (an upper bound of
         what hiding it can give), 2 no global stores, 3 no MMA;
  cudnn  every plan cuDNN's heuristics offer (up to MIOFIND_CUDNN_PLANS).
plain and acc2 configs are verified against the float64 reference first (diag variants compute wrong results by
design and are not). Times are 'isolated' (bench/kernel_timing.py: one call in a CUDA graph, replayed with a
synchronisation each time, median), and the config pairs are timed alternately, 3 rounds, the median kept.
    python3 f_epi.py --json out.json [--set resnet50|nonresnet] [--dtype FP16]"""
import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

import kernel_timing  # noqa: E402

TILES = ((128, 64, 2), (256, 64, 2), (128, 128, 2), (128, 256, 2), (64, 128, 1), (64, 256, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--set", default="resnet50")
    ap.add_argument("--dtype", default="FP16")
    ap.add_argument("--iters", type=int, default=40)
    a = ap.parse_args()
    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile
    from shapes import NON_RESNET, _resnet50
    from solvers.implicit_gemm_hopper_base import blocks_per_sm

    dev = current_device()
    hop, cud = get_solver("ConvImplicitGemmHopperFwd"), get_solver("ConvCudnnFwd")
    layers = _resnet50(32) if a.set == "resnet50" else {k: dict(v, n=32) for k, v in NON_RESNET.items()}

    def sol_with(p, cfg, extra):
        s = hop.get_solution(p, cfg)
        if extra:
            s.kernels[0] = dataclasses.replace(s.kernels[0], macros=s.kernels[0].macros + tuple(extra))
        return s

    cases, todo = [], []
    for name, kw in layers.items():
        p = ProblemDescription.make("F", layout="NHWC", dtype=a.dtype, **kw)
        if not hop.applicability(p):
            continue
        cfgs = []
        for bm, bn, wgs in TILES:
            for st in (3, 4) + ((8,) if (bm, bn) == (64, 128) else ()):
                c = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1}
                if hop.is_valid_config(p, c):
                    cfgs.append(c)
        if not cfgs:
            continue
        acc2_ok = [c for c in cfgs if c["BM"] // (64 * c["WGS"]) * c["BN"] <= 128
                   and not (c["WGS"] == 2 and blocks_per_sm(p, c) == 2)]
        cases.append((name, p, cfgs, acc2_ok))
        for c in cfgs:
            todo += sol_with(p, c, ()).kernels
        for c in acc2_ok:
            todo += sol_with(p, c, (("ACC2", "1"),)).kernels
    t0 = time.time()
    n, errs = precompile(todo, dev.arch)
    print(f"precompiled {n} kernels in {time.time() - t0:.0f} s; errors: {errs or 'none'}", flush=True)

    rows = []
    for name, p, cfgs, acc2_ok in cases:
        h = Harness(p, verify=True, seed=0)
        pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
        row = {"layer": name, "key": p.key()}
        best_c = math.inf
        for cfg, t in kernel_timing.timed_configs(h, p, cud, None, "cudnn",
                                                  lambda call, inv, ws: {"iso": kernel_timing.isolated_ms(call, a.iters)}):
            if t["iso"] < best_c:
                best_c, row["cudnn_cfg"] = t["iso"], cfg
        row["cudnn_us"] = best_c * 1e3

        def invoker(cfg, extra, check):
            s = sol_with(p, cfg, extra)
            inv = build_invoker(p, s)
            ws = h.workspace(s.workspace_bytes)
            if check:
                h.check(inv, ws, "implicit_gemm_hopper")
            pw = 0 if ws is None else ws.data.ptr
            return lambda st: inv(pa, pb, po, pw, st)

        pairs = []
        for c in cfgs:
            try:
                calls = {"plain": invoker(c, (), True)}
                if c in acc2_ok:
                    calls["acc2"] = invoker(c, (("ACC2", "1"),), True)
            except Exception as e:
                print(f"  {name} {c}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                row.setdefault("errors", []).append(f"{c}: {type(e).__name__}: {str(e)[:300]}")
                continue
            pairs.append((c, calls))
        times = {}
        for rnd in range(3):
            for c, calls in pairs:
                for side, call in calls.items():
                    times.setdefault((json.dumps(c), side), []).append(kernel_timing.isolated_ms(call, a.iters) * 1e3)
        med = {k: sorted(v)[1] for k, v in times.items()}
        row["configs"] = [{"cfg": json.loads(k[0]), "side": k[1], "us": v} for k, v in med.items()]
        for side in ("plain", "acc2"):
            got = [(v, k[0]) for k, v in med.items() if k[1] == side]
            if got:
                row[f"{side}_us"], cj = min(got)
                row[f"{side}_cfg"] = json.loads(cj)
        # ACC2 against the same config plain, where both ran
        same = [(med[(k, "acc2")] / med[(k, "plain")]) for (k, s) in med if s == "acc2" and (k, "plain") in med]
        row["acc2_same_cfg_geomean"] = math.exp(sum(map(math.log, same)) / len(same)) if same else None
        rows.append(row)
        print(f"{name:26s} cudnn {row['cudnn_us']:7.1f} plain {row.get('plain_us', 0):7.1f} acc2 "
              f"{row.get('acc2_us') or 0:7.1f} same-cfg acc2/plain {row['acc2_same_cfg_geomean'] or 0:.3f}", flush=True)
        Path(a.json).write_text(json.dumps({"device": dev.name, "rows": rows}, indent=1))

    # the diagnostic builds of each layer's best plain config
    todo = [k for (name, p, _, _), row in zip(cases, rows) if "plain_cfg" in row
            for d in (1, 2, 3) for k in sol_with(p, row["plain_cfg"], (("F_DIAG", str(d)),)).kernels]
    t0 = time.time()
    n, errs = precompile(todo, dev.arch)
    print(f"precompiled {n} diagnostic kernels in {time.time() - t0:.0f} s; errors: {errs or 'none'}", flush=True)
    for (name, p, _, _), row in zip(cases, rows):
        h = Harness(p, verify=False, seed=0)
        pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
        if "plain_cfg" in row:
            c = row["plain_cfg"]
            for d in (1, 2, 3):
                try:
                    sd = sol_with(p, c, (("F_DIAG", str(d)),))
                    inv = build_invoker(p, sd)
                    call = lambda st, inv=inv: inv(pa, pb, po, 0, st)  # noqa: E731
                    row[f"diag{d}_us"] = sorted(kernel_timing.isolated_ms(call, a.iters) * 1e3 for _ in range(3))[1]
                except Exception as e:
                    row[f"diag{d}_us"] = None
                    print(f"  diag{d} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        f = lambda k: f"{row[k]:7.1f}" if row.get(k) else "      -"  # noqa: E731
        pc = row.get("plain_cfg") or {}
        print(f"{name:26s} cudnn {f('cudnn_us')} plain {f('plain_us')} acc2 {f('acc2_us')} | no-epi {f('diag1_us')} "
              f"no-store {f('diag2_us')} no-mma {f('diag3_us')} | same-cfg acc2/plain "
              f"{row['acc2_same_cfg_geomean'] or 0:.3f} | {pc.get('BM')}x{pc.get('BN')}/{pc.get('WGS')}/s{pc.get('STAGES')}",
              flush=True)
        Path(a.json).write_text(json.dumps({"device": dev.name, "rows": rows}, indent=1))

    def gm(num, den):
        v = [math.log(r[num] / r[den]) for r in rows if r.get(num) and r.get(den)]
        return f"{math.exp(sum(v) / len(v)):.3f} ({len(v)})" if v else "-"
    print(f"\ngeomean over layers: plain/cudnn {gm('plain_us', 'cudnn_us')}  "
          f"acc2/plain (each side's best) {gm('acc2_us', 'plain_us')}  "
          f"no-epi/plain {gm('diag1_us', 'plain_us')}  no-store/plain {gm('diag2_us', 'plain_us')}  "
          f"no-mma/plain {gm('diag3_us', 'plain_us')}")
    for r in rows:
        r["best_us"] = min(r.get("plain_us") or math.inf, r.get("acc2_us") or math.inf)
    print(f"best of plain and acc2 / cudnn {gm('best_us', 'cudnn_us')}")
    Path(a.json).write_text(json.dumps({"device": dev.name, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
