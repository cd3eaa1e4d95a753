"""Every applicable solver's errors against the float64 reference, and how close each comes to the
tolerances of ``miofind.verify.tolerance_for`` (GPU): the measurement behind verify.py's table.

For each problem and data type, every applicable solver runs each config a find would measure on the
harness's random inputs; the output's ``Errors`` (relative L2, MIOpen's RMS, max element) and the
tolerance are written one JSON line per run, then the worst use of the tolerance per (data type,
direction, family) is printed: ``rms/tol`` and ``max/elem`` (1.0 = at the bound), and ``max/rms``,
the element-to-RMS ratio the ELEMENT_MULTIPLE of 10 must cover.

    python bench/verify_errors.py --out bench/results/verify-errors [--dtypes FP32 FP16 BF16] [--tf32] [--keys K ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

# problems that span the families and the extremes of f and of the reduction length
KEYS = [
    "64-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-F",
    "64-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-B",
    "64-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-W",
    "256-56-56-1x1-64-56-56-8-0x0-1x1-1x1-0-NCHW-FP32-F",
    "512-28-28-1x1-256-56-56-8-0x0-2x2-1x1-0-NCHW-FP32-B",
    "128-28-28-3x3-128-14-14-8-1x1-2x2-1x1-0-NCHW-FP32-W",
    "32-112-112-3x3-32-112-112-8-1x1-1x1-1x1-0-NCHW-FP32-F_g32",
    "32-112-112-3x3-32-112-112-8-1x1-1x1-1x1-0-NCHW-FP32-W_g32",
    "512-7-7-3x3-512-7-7-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-B",
    "1536-32-32-3x3-512-32-32-8-1x1-1x1-1x1-0-NCHW-FP32-F",
    "3-224-224-7x7-64-112-112-8-3x3-2x2-1x1-0-NCHW-FP32-F",
    "64-256-256-3x3-64-256-256-32-1x1-1x1-1x1-0-NCHW-FP32-W",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", nargs="+", default=["FP32", "FP16", "BF16"])
    ap.add_argument("--tf32", action="store_true", help="also FP32 data with TF32 math")
    ap.add_argument("--keys", nargs="+", default=KEYS, help="FP32 problem keys (the dtype is substituted)")
    a = ap.parse_args()

    from miofind.find import candidates, prepare_all
    from miofind.harness import Harness, VerifyError
    from miofind.problem import ProblemDescription
    from miofind.verify import tolerance_for

    os.makedirs(a.out, exist_ok=True)
    worst: dict[tuple, dict] = {}
    with open(os.path.join(a.out, "errors.jsonl"), "w") as log:
        for key in a.keys:
            for dt in a.dtypes:
                maths = ("strict", "tf32") if dt == "FP32" and a.tf32 else ("strict",)
                for math_mode in maths:
                    p = dataclasses.replace(ProblemDescription.from_key(key.replace("FP32", dt)), math=math_mode)
                    t0 = time.perf_counter()
                    cands, _ = candidates(p)
                    todo = []
                    for s in cands:
                        try:
                            todo += [(s, c) for c in s.find_configs(p)]
                        except Exception as e:
                            print(f"  {s.id}: find_configs: {e}")
                    prepared, ref_inv = prepare_all(p, todo)
                    h = Harness(p, seed=1, reference_invoker=ref_inv)
                    for (s, cfg), (sol, inv) in zip(todo, prepared):
                        row = dict(key=p.key(), math=p.math, solver=s.id, family=s.family, config=cfg)
                        if inv is None:
                            row["error"] = f"{sol.stage}: {sol.reason[:200]}"
                        else:
                            try:
                                h.check(inv, h.workspace(sol.workspace_bytes), s.family)
                            except VerifyError:
                                pass
                            except Exception as e:
                                row["error"] = f"launch: {str(e)[:200]}"
                            h.release()
                            if "error" not in row:
                                e, tol = h.errors, tolerance_for(p, s.family)
                                row.update(rel_l2=e.rel_l2, rms=e.rms, max_abs=e.max_abs, tol=tol.rms,
                                           elem=tol.element, passes=tol.failure(e) is None)
                                k = ("TF32" if p.math == "tf32" else dt, p.as_conv().direction, s.family)
                                w = worst.setdefault(k, dict(rms_tol=0.0, max_elem=0.0, max_rms=0.0, n=0, fail=0))
                                w["n"] += 1
                                w["fail"] += not row["passes"]
                                w["rms_tol"] = max(w["rms_tol"], e.rms / tol.rms)
                                w["max_elem"] = max(w["max_elem"], e.max_abs / tol.element)
                                if e.rms > 0:
                                    w["max_rms"] = max(w["max_rms"], e.max_abs / e.rms)
                        log.write(json.dumps(row) + "\n")
                        log.flush()
                    print(f"{p.key()} {p.math}: {len(todo)} runs in {time.perf_counter() - t0:.1f} s", flush=True)
    lines = [f"{'row':28} {'runs':>5} {'fail':>5} {'rms/tol':>8} {'max/elem':>9} {'max/rms':>8}"]
    for k, w in sorted(worst.items()):
        lines.append(f"{' '.join(k):28} {w['n']:5d} {w['fail']:5d} {w['rms_tol']:8.3f} {w['max_elem']:9.3f} "
                     f"{w['max_rms']:8.1f}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(a.out, "summary.txt"), "w") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
