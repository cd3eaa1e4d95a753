"""Session nov30f, call 8: does cuBLASLt's heuristic offer, beyond the first 8 places the GEMM solvers' space tries
(LT_ALGOS), algorithms faster than cuDNN's own nvjet choice on ResNet-50's 1x1 stride-1 layers (FP16 NHWC, N = 32)?
Calls 3-5: on the W layers at 14 x 14 and 7 x 7 our Hopper W kernel's copies alone outlast cuBLASLt's whole GEMM, so
those layers' own best is cuBLASLt at about 1.0 of cuDNN. Here LT_ALGOS is raised to 64 for the run (miofind.cublas and
solvers/gemm_base.py, patched in this process only) and every place the heuristic offers is timed on one Harness (each
verified against the float64 reference first; a place it does not offer fails and is left out), W
(GemmWrw1x1_stride1) on the 11 1x1 stride-1 W layers and F (GemmFwd1x1_0_1) on the 11 1x1 stride-1 F layers, beside
cuDNN's plans; isolated and back to back, medians of 2 interleaved passes.

    python lt_places.py OUT.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
PLACES = 64


def main():
    import kernel_timing as kt
    from miofind import cublas
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers import gemm_base
    from shapes import _resnet50

    cublas.LT_ALGOS = gemm_base.LT_ALGOS = PLACES
    rows = []
    for d, sid, cid in (("W", "GemmWrw1x1_stride1", "ConvCudnnWrw"), ("F", "GemmFwd1x1_0_1", "ConvCudnnFwd")):
        G, C = get_solver(sid), get_solver(cid)
        for name, kw in _resnet50(32).items():
            if not name.endswith("_1x1s1"):
                continue
            p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **kw)
            h = Harness(p, verify=True, seed=0)
            keep = lambda call, inv, ws: {"call": call, "ws": ws}  # noqa: E731
            import io
            import contextlib
            log = io.StringIO()
            with contextlib.redirect_stdout(log):      # the places the heuristic does not offer fail: not printed
                ents = [{"kind": "lt", "cfg": c, **t}
                        for c, t in kt.timed_configs(h, p, G, [{"LT": i} for i in range(PLACES)], G.family, keep)]
            ents += [{"kind": "cudnn", "cfg": c, **t} for c, t in kt.timed_configs(h, p, C, None, "cudnn", keep)]
            for _ in range(2):
                for e in ents:
                    e.setdefault("iso", []).append(kt.isolated_ms(e["call"], 30) * 1e3)
                    e.setdefault("gpu", []).append(kt.graph_ms(e["call"], 30) * 1e3)
            for e in ents:
                e.pop("call"), e.pop("ws")
                e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
            lt = [e for e in ents if e["kind"] == "lt"]
            fails = [ln for ln in log.getvalue().splitlines() if ln.strip()]
            if fails:
                print(f"  {len(fails)} places failed; the first: {fails[0].strip()[:300]}", flush=True)
            cud = min(e["iso_us"] for e in ents if e["kind"] == "cudnn")
            cudg = min(e["gpu_us"] for e in ents if e["kind"] == "cudnn")
            first8 = min((e for e in lt if e["cfg"]["LT"] < 8), key=lambda e: e["iso_us"])
            best = min(lt, key=lambda e: e["iso_us"])
            bestg = min(lt, key=lambda e: e["gpu_us"])
            print(f"{d} {name:26s} places {len(lt):2d}; cuDNN {cud:.1f} us; best of first 8 {first8['iso_us'] / cud:.3f}"
                  f" (LT {first8['cfg']['LT']}), of all {best['iso_us'] / cud:.3f} (LT {best['cfg']['LT']}); back to "
                  f"back {bestg['gpu_us'] / cudg:.3f} (LT {bestg['cfg']['LT']})", flush=True)
            rows.append({"dir": d, "layer": name, "key": p.key(), "entries": ents})
            del h
            Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))
    for d in ("W", "F"):
        for label, pick in (("first 8", lambda e: e["cfg"]["LT"] < 8), ("all", lambda e: True)):
            for m in ("iso_us", "gpu_us"):
                v = [min(e[m] for e in r["entries"] if e["kind"] == "lt" and pick(e)) /
                     min(e[m] for e in r["entries"] if e["kind"] == "cudnn") for r in rows if r["dir"] == d]
                print(f"geomean {d} cuBLASLt {label} / cuDNN, {m[:-3]}: {math.exp(sum(map(math.log, v)) / len(v)):.3f}"
                      f" ({len(v)} layers)")


if __name__ == "__main__":
    main()
