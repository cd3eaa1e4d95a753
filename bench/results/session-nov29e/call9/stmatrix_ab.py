"""Session nov29e, call 9: ConvImplicitGemmHopperFwdTmaStore's staging of the output tile by stmatrix.x4 (STMATRIX = 1,
the kernel's default now) against its 4-byte pair stores (STMATRIX = 0, calls 1-8), the same solver, config and buffers,
the two interleaved config by config, every candidate verified against the float64 reference first; beside cuDNN's
best plan. Per ResNet-50 N=32 FP16 NHWC forward layer it applies to: its find configs and the configs call 7 tuned
(``--tuned``: call 7's out/perf.txt). Isolated kernel time and back to back in a CUDA graph (bench/kernel_timing.py).

    python stmatrix_ab.py --tuned ../call7/out/perf.txt --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import kernel_timing  # noqa: E402


class Variant:
    """The solver with a macro added to its kernels (the same id and family: verified and timed as the solver)."""

    def __init__(self, solver, macro: str, value: str) -> None:
        self.s, self.macro, self.value = solver, macro, value
        self.id, self.family = solver.id, solver.family

    def get_solution(self, p, c):
        sol = self.s.get_solution(p, c)
        return dataclasses.replace(sol, kernels=[dataclasses.replace(k, macros=k.macros + ((self.macro, self.value),))
                                                 for k in sol.kernels])

    def find_configs(self, p):
        return self.s.find_configs(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tuned", default="")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile
    from shapes import _resnet50

    dev = current_device()
    ts, cud = get_solver("ConvImplicitGemmHopperFwdTmaStore"), get_solver("ConvCudnnFwd")
    old, new = Variant(ts, "STMATRIX", "0"), Variant(ts, "STMATRIX", "1")
    tuned = {}
    if a.tuned:
        for ln in Path(a.tuned).read_text().splitlines():
            key, cfg = ln.split("|")[:2]
            tuned[key] = json.loads(cfg)
    cases, todo = [], []
    for name, kw in _resnet50(32).items():
        p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **kw)
        if not ts.applicability(p):
            continue
        cfgs = [ts.default_config(p)] + [c for c in ts.find_configs(p) if c is not None]
        if p.key() in tuned and ts.is_valid_config(p, tuned[p.key()]):
            cfgs.append(tuned[p.key()])
        cfgs = [c for i, c in enumerate(cfgs) if c not in cfgs[:i]]
        for c in cfgs:
            todo += old.get_solution(p, c).kernels + new.get_solution(p, c).kernels
        cases.append((name, p, cfgs))
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} kernels in {time.time() - t0:.1f} s; errors: {len(errs) if errs else 'none'}", flush=True)
    timings = lambda call, inv, ws: {"isolated_ms": kernel_timing.isolated_ms(call, a.iters),  # noqa: E731
                                     "gpu_ms": kernel_timing.graph_ms(call, a.iters)}
    rows = []
    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan  # noqa: E731
    for name, p, cfgs in cases:
        h = Harness(p, verify=True, seed=0)
        row = {"layer": name, "key": p.key(), "cudnn": [], "pairs": []}
        row["cudnn"] = [{"cfg": c, **t} for c, t in kernel_timing.timed_configs(h, p, cud, None, "cudnn", timings)]
        for c in cfgs:
            o = kernel_timing.timed_configs(h, p, old, [c], ts.family, timings)
            n = kernel_timing.timed_configs(h, p, new, [c], ts.family, timings)
            if o and n:
                row["pairs"].append({"cfg": c, "stmatrix0": o[0][1], "stmatrix1": n[0][1]})
        rows.append(row)
        cb = min((r["isolated_ms"] for r in row["cudnn"]), default=math.nan)
        r0 = min((q["stmatrix0"]["isolated_ms"] for q in row["pairs"]), default=math.inf)
        r1 = min((q["stmatrix1"]["isolated_ms"] for q in row["pairs"]), default=math.inf)
        print(f"{name}: cuDNN {cb * 1e3:.1f} us; best / cuDNN pair stores {r0 / cb:.3f}, stmatrix {r1 / cb:.3f}; "
              f"stmatrix / pair stores at the same config "
              + " ".join(f"{q['stmatrix1']['isolated_ms'] / q['stmatrix0']['isolated_ms']:.2f}" for q in row["pairs"]),
              flush=True)
        del h
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": rows, "device": dev.name, "command": " ".join(sys.argv)}, indent=1))
    for m in ("isolated_ms", "gpu_ms"):
        pr = [q["stmatrix1"][m] / q["stmatrix0"][m] for row in rows for q in row["pairs"]]
        b0 = [min(q["stmatrix0"][m] for q in row["pairs"]) / min(r[m] for r in row["cudnn"]) for row in rows
              if row["pairs"] and row["cudnn"]]
        b1 = [min(q["stmatrix1"][m] for q in row["pairs"]) / min(r[m] for r in row["cudnn"]) for row in rows
              if row["pairs"] and row["cudnn"]]
        print(f"{m[:-3]}: stmatrix / pair stores at the same config {g(pr):.3f} over {len(pr)} pairs; the solver's best / "
              f"cuDNN's best {g(b0):.3f} -> {g(b1):.3f} ({len(b0)} layers)")


if __name__ == "__main__":
    main()
