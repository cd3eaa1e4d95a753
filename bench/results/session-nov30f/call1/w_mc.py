"""Session nov30f, call 1: the Hopper W kernel's multicast pairs (MC = 2: two adjacent N tiles of one M tile as a
cluster, each copying half of the shared dy tile to both) against the same configs unpaired, on ResNet-50's 1x1
stride-1 W layers (FP16 NHWC, N = 32). Session nov30e's call 10: on 1024 -> 512 @14 the SMs receive the same bytes from
L2 for cuDNN's nvjet GEMM (clusters of two) and our 64 x 64 tile, but the L2 slices move 35% fewer for nvjet. Times, on
one Harness (each candidate verified against the float64 reference first): tiles 64 x 64, 64 x 128 (one consumer
warpgroup), 128 x 64, 128 x 128 (two), unpaired at 6 and 8 stages, paired at 4, 6, 8 and 12; each unsplit (ST16 where
valid) and at the solver's split estimate; the solver's find configs, cuBLASLt's default place (GemmWrw1x1_stride1)
and cuDNN's plans. Isolated and back-to-back times, medians of 2 interleaved passes.

    python w_mc.py OUT.json [LAYER ...]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

LAYERS = ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1", "r50_512to2048_7_1x1s1", "r50_1024to256_14_1x1s1",
          "r50_256to1024_14_1x1s1", "r50_512to256_28_1x1s1", "r50_512to128_28_1x1s1", "r50_128to512_28_1x1s1",
          "r50_64to256_56_1x1s1", "r50_256to64_56_1x1s1", "r50_256to128_56_1x1s1")
TILES = ((64, 64, 1), (64, 128, 1), (128, 64, 2), (128, 128, 2))
STAGES = {1: (6, 8), 2: (4, 6, 8, 12)}


def main():
    import kernel_timing as kt
    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from miofind.tuning.precompile import precompile
    from shapes import _resnet50

    W = get_solver("ConvImplicitGemmHopperWrw")
    G, C = get_solver("GemmWrw1x1_stride1"), get_solver("ConvCudnnWrw")
    cases, todo = [], []
    for name in sys.argv[2:] or LAYERS:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        cfgs = []
        for bm, bn, wgs in TILES:
            for mc, stages in STAGES.items():
                for st in stages:
                    base = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1,
                            "TMA": 1, "ST16": 0, "RG": 4, "MC": mc}
                    dsk = wrw.default_split(p, base)
                    for c in (dict(base, ST16=1), base, dict(base, SPLITK=dsk)):
                        c = dict(c, RG=wrw.red_groups(p, c))
                        if W.is_valid_config(p, c) and c not in cfgs:
                            cfgs.append(c)
                            if c["ST16"]:
                                break       # unsplit: ST16 where valid, else plain
        cfgs = [c for i, c in enumerate(cfgs) if not (c["ST16"] == 0 and c["SPLITK"] == 1 and
                                                      dict(c, ST16=1) in cfgs)]
        find = [dict(W.config_of(p, c)) for c in W.find_configs(p)]
        cases.append((name, p, cfgs, find))
        for c in cfgs + find:
            todo += W.get_solution(p, c).kernels
        print(f"{name}: {len(cfgs)} configs, find {len(find)}", flush=True)
    t0 = time.time()
    n, errs = precompile(todo, current_device().arch)
    print(f"precompiled {n} kernels in {time.time() - t0:.0f} s; errors: {len(errs) if errs else 'none'}", flush=True)
    rows = []
    for name, p, cfgs, find in cases:
        h = Harness(p, verify=True, seed=0)
        keep = lambda call, inv, ws: {"call": call, "ws": ws}  # noqa: E731
        entries = [{"kind": f"mc{c['MC']}", "cfg": c, **t}
                   for c, t in kt.timed_configs(h, p, W, cfgs, "implicit_gemm_hopper", keep)]
        nbad = len(cfgs) - len(entries)
        entries += [{"kind": "find", "cfg": c, **t}
                    for c, t in kt.timed_configs(h, p, W, find, "implicit_gemm_hopper", keep)]
        entries += [{"kind": "gemm", "cfg": c, **t} for c, t in kt.timed_configs(h, p, G, [{"LT": 0}], G.family, keep)]
        entries += [{"kind": "cudnn", "cfg": c, **t} for c, t in kt.timed_configs(h, p, C, None, "cudnn", keep)]
        for _ in range(2):
            for e in entries:
                e.setdefault("iso", []).append(kt.isolated_ms(e["call"], 30) * 1e3)
                e.setdefault("gpu", []).append(kt.graph_ms(e["call"], 30) * 1e3)
        for e in entries:
            e.pop("call"), e.pop("ws")
            e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
        best = {k: min((e for e in entries if e["kind"] == k), key=lambda e: e["iso_us"], default=None)
                for k in ("mc1", "mc2", "find", "gemm", "cudnn")}
        cud = best["cudnn"]["iso_us"]
        print(f"\n{name}: cuDNN {cud:.1f} us, cuBLASLt {best['gemm']['iso_us']:.1f} ({best['gemm']['iso_us'] / cud:.3f}),"
              f" find {best['find']['iso_us']:.1f} ({best['find']['iso_us'] / cud:.3f}); failed/unbuilt MC configs "
              f"{nbad}", flush=True)
        for k in ("mc1", "mc2"):
            if best[k]:
                print(f"  best {k}: {best[k]['iso_us']:.1f} us ({best[k]['iso_us'] / cud:.3f}) {best[k]['cfg']}")
        pairs = []
        for e in entries:
            if e["kind"] == "mc2":
                twin = next((f for f in entries if f["kind"] == "mc1" and f["cfg"] == dict(e["cfg"], MC=1)), None)
                if twin:
                    pairs.append(e["iso_us"] / twin["iso_us"])
        if pairs:
            print(f"  paired / unpaired, same config ({len(pairs)}): median {statistics.median(pairs):.3f}, "
                  f"min {min(pairs):.3f}, max {max(pairs):.3f}")
        for e in sorted((e for e in entries if e["kind"].startswith("mc")), key=lambda e: e["iso_us"])[:5]:
            print(f"  {e['iso_us'] / cud:.3f} iso {e['gpu_us']:.1f} gpu us  {e['cfg']}", flush=True)
        rows.append({"layer": name, "key": p.key(), "failed": nbad, "entries": entries})
        del h
        Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))

    def gm(v):
        return math.exp(sum(map(math.log, v)) / len(v))
    for label, kinds in (("unpaired (6, 8 stages)", ("mc1",)), ("paired", ("mc2",)), ("both", ("mc1", "mc2")),
                         ("find configs", ("find",)), ("cuBLASLt", ("gemm",)), ("all but cuDNN", ("mc1", "mc2", "find",
                                                                                                  "gemm"))):
        v = [min(e["iso_us"] for e in r["entries"] if e["kind"] in kinds) / min(e["iso_us"] for e in r["entries"]
                                                                               if e["kind"] == "cudnn") for r in rows]
        print(f"geomean {label} / cuDNN (isolated): {gm(v):.3f} ({len(v)} layers)")


if __name__ == "__main__":
    main()
