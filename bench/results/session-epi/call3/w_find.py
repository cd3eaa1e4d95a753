"""Session epi, call 3 (issue 19): what a find of the Hopper W solver now measures on each layer, the default config
and the ALTERNATES configs of the least estimated time (find_configs), timed isolated (bench/kernel_timing.py) beside
cuDNN's plans on the same buffers, every candidate verified against the float64 reference first; with the shipped
DB's tuned config for the layer where it has one. Per layer: default / cuDNN, fastest of the find's configs / cuDNN,
and with the tuned config.
    python3 w_find.py --set nonresnet|resnet50 --dtypes FP16,BF16 --json out.json"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

import kernel_timing  # noqa: E402
from bench_kernel_time import tuned_config  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="nonresnet")
    ap.add_argument("--dtypes", default="FP16")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--deadline", type=float, default=1e9)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile
    from shapes import NON_RESNET, _resnet50

    t0 = time.time()
    dev = current_device()
    hop, cud = get_solver("ConvImplicitGemmHopperWrw"), get_solver("ConvCudnnWrw")
    layers = _resnet50(32) if a.set == "resnet50" else {k: dict(v, n=32) for k, v in NON_RESNET.items()}
    cases, todo = [], []
    for dt in a.dtypes.split(","):
        for name, kw in layers.items():
            p = ProblemDescription.make("W", layout="NHWC", dtype=dt, **kw)
            if not hop.applicability(p):
                continue
            t = time.perf_counter()
            found = [hop.default_config(p) if c is None else c for c in hop.find_configs(p)]
            list_ms = (time.perf_counter() - t) * 1e3
            tuned = tuned_config(p.key(), hop.id)
            tuned = hop.legacy_config(tuned) if tuned and hop.is_valid_config(p, tuned) else None
            cases.append((name, dt, p, found, tuned, list_ms))
            for c in found + ([tuned] if tuned else []):
                todo += hop.get_solution(p, c).kernels
    n, errs = precompile(todo, dev.arch)
    print(f"precompiled {n} kernels in {time.time() - t0:.0f} s; errors: {errs or 'none'}", flush=True)
    rows = []
    iso = lambda call, inv, ws: {"us": kernel_timing.isolated_ms(call, a.iters) * 1e3}  # noqa: E731
    for name, dt, p, found, tuned, list_ms in cases:
        if time.time() - t0 > a.deadline:
            print(f"deadline: stopped before {name} {dt}", flush=True)
            break
        h = Harness(p, verify=True, seed=0)
        cu = min(t["us"] for _, t in kernel_timing.timed_configs(h, p, cud, None, "cudnn", iso))
        got = kernel_timing.timed_configs(h, p, hop, found + ([tuned] if tuned and tuned not in found else []),
                                          "implicit_gemm_hopper", iso)
        us = {json.dumps(c, sort_keys=True): t["us"] for c, t in got}
        key = lambda c: json.dumps(c, sort_keys=True)  # noqa: E731
        d = us.get(key(found[0]))
        f = min((us[key(c)] for c in found if key(c) in us), default=None)
        tu = us.get(key(tuned)) if tuned else None
        row = {"layer": name, "dtype": dt, "key": p.key(), "cudnn_us": cu, "default_us": d, "find_us": f,
               "tuned_us": tu, "list_ms": list_ms, "configs": [{"cfg": json.loads(k), "us": v} for k, v in us.items()],
               "find_configs": found, "tuned": tuned}
        rows.append(row)
        r = lambda v: f"{v / cu:.3f}" if v else "  -  "  # noqa: E731
        best = min(found, key=lambda c: us.get(key(c), math.inf))
        print(f"{name:24s} {dt} cudnn {cu:7.1f} default {r(d)} find {r(f)} tuned {r(tu)} list {list_ms:5.1f} ms  "
              f"best {best['BM']}x{best['BN']}/{best['WGS']} s{best['STAGES']} sk{best['SPLITK']} cl{best['CLUSTER']}",
              flush=True)
        Path(a.json).write_text(json.dumps({"device": dev.name, "rows": rows}, indent=1))
        del h

    def gm(k, dt):
        v = [math.log(r[k] / r["cudnn_us"]) for r in rows if r["dtype"] == dt and r.get(k)]
        return f"{math.exp(sum(v) / len(v)):.3f} ({len(v)})" if v else "-"
    for dt in a.dtypes.split(","):
        print(f"geomean {dt}: default / cuDNN {gm('default_us', dt)}  find's configs / cuDNN {gm('find_us', dt)}  "
              f"tuned / cuDNN {gm('tuned_us', dt)}")


if __name__ == "__main__":
    main()
