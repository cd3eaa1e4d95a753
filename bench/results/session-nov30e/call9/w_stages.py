"""Session nov30e, call 9: do deeper pipelines close the Hopper W kernel's gap to cuBLASLt on ResNet-50's 1x1 stride-1 W
layers at 28 x 28, 14 x 14 and 7 x 7 (FP16 NHWC, N = 32)? Call 8's ncu: cuDNN runs them with nvjet's unsplit 64 x 64
(13 stages) or 128 x 64 (8 stages) tiles in clusters of two, 128 blocks, where our same unsplit 64 x 64 tile with 6
stages takes 1.48x its time. The solver's configs stop at 6 stages (``config_ok``); this probe admits up to 12 where
the shared memory holds them (the kernel takes any STAGES >= 3) and times, on one Harness (each candidate verified
against the float64 reference first): tiles 64 x 64, 64 x 128 (one consumer warpgroup), 128 x 64, 128 x 128 (two) at
STAGES 4, 6, 8, 10, 12, unsplit (with and without ST16) and split in two; cuBLASLt's default place (GemmWrw1x1_stride1)
and cuDNN's plans. Isolated and back-to-back times, medians of 2 interleaved passes.

    python w_stages.py OUT.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

LAYERS = ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1", "r50_512to2048_7_1x1s1", "r50_1024to256_14_1x1s1",
          "r50_256to1024_14_1x1s1", "r50_512to256_28_1x1s1", "r50_512to128_28_1x1s1", "r50_128to512_28_1x1s1")
TILES = ((64, 64, 1), (64, 128, 1), (128, 64, 2), (128, 128, 2))
STAGES = (4, 6, 8, 10, 12)


def main():
    import kernel_timing as kt
    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from miofind.tuning.precompile import precompile
    from shapes import _resnet50

    orig_ok = wrw.config_ok

    def deep_ok(p, cfg):     # config_ok with STAGES up to 12 (the shared-memory check still binds)
        st = cfg["STAGES"]
        return orig_ok(p, dict(cfg, STAGES=min(st, 6))) and 3 <= st <= 12 and \
            wrw.smem_bytes(cfg) + 16 * st * cfg["WSPEC"] <= wrw.SMEM_LIMIT
    W = get_solver("ConvImplicitGemmHopperWrw")
    type(W).tile_ok = staticmethod(deep_ok)
    G, C = get_solver("GemmWrw1x1_stride1"), get_solver("ConvCudnnWrw")
    cases, todo = [], []
    for name in LAYERS:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        cfgs = []
        for bm, bn, wgs in TILES:
            for st in STAGES:
                for sk, s16 in ((1, 0), (1, 1), (2, 0)):
                    c = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": sk, "CLUSTER": 1, "WSPEC": 1,
                         "TMA": 1, "ST16": s16, "RG": 4}
                    if W.is_valid_config(p, c) and c not in cfgs:
                        cfgs.append(c)
        cases.append((name, p, cfgs))
        for c in cfgs:
            todo += W.get_solution(p, c).kernels
        print(f"{name}: {len(cfgs)} configs", flush=True)
    n, errs = precompile(todo, current_device().arch)
    print(f"precompiled {n} kernels; errors: {len(errs) if errs else 'none'}", flush=True)
    rows = []
    for name, p, cfgs in cases:
        h = Harness(p, verify=True, seed=0)
        keep = lambda call, inv, ws: {"call": call, "ws": ws}  # noqa: E731
        entries = [{"kind": "ours", "cfg": c, **t} for c, t in kt.timed_configs(h, p, W, cfgs, "implicit_gemm_hopper",
                                                                                keep)]
        entries += [{"kind": "gemm", "cfg": c, **t} for c, t in kt.timed_configs(h, p, G, [{"LT": 0}], G.family, keep)]
        entries += [{"kind": "cudnn", "cfg": c, **t} for c, t in kt.timed_configs(h, p, C, None, "cudnn", keep)]
        for _ in range(2):
            for e in entries:
                e.setdefault("iso", []).append(kt.isolated_ms(e["call"], 30) * 1e3)
                e.setdefault("gpu", []).append(kt.graph_ms(e["call"], 30) * 1e3)
        for e in entries:
            e.pop("call"), e.pop("ws")
            e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
        cud = min(e["iso_us"] for e in entries if e["kind"] == "cudnn")
        gem = min(e["iso_us"] for e in entries if e["kind"] == "gemm")
        ours = [e for e in entries if e["kind"] == "ours"]
        shallow = min((e for e in ours if e["cfg"]["STAGES"] <= 6), key=lambda e: e["iso_us"])
        deep = min((e for e in ours if e["cfg"]["STAGES"] > 6), key=lambda e: e["iso_us"], default=None)
        print(f"\n{name}: cuDNN {cud:.1f} us, cuBLASLt {gem:.1f}; ours <= 6 stages {shallow['iso_us']:.1f} "
              f"({shallow['iso_us'] / cud:.3f}) {shallow['cfg']}" + (
                  f"; > 6 stages {deep['iso_us']:.1f} ({deep['iso_us'] / cud:.3f}) {deep['cfg']}" if deep else ""),
              flush=True)
        for e in sorted(ours, key=lambda e: e["iso_us"])[:4]:
            print(f"  {e['iso_us'] / cud:.3f} iso {e['gpu_us']:.1f} gpu us  {e['cfg']}", flush=True)
        rows.append({"layer": name, "key": p.key(), "entries": entries})
        del h
        Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))

    def gm(v):
        return math.exp(sum(map(math.log, v)) / len(v))
    for label, keep in (("ours <= 6 stages", lambda e: e["kind"] == "ours" and e["cfg"]["STAGES"] <= 6),
                        ("ours, any stages", lambda e: e["kind"] == "ours"), ("cuBLASLt", lambda e: e["kind"] == "gemm")):
        v = [min(e["iso_us"] for e in r["entries"] if keep(e)) / min(e["iso_us"] for e in r["entries"]
                                                                         if e["kind"] == "cudnn") for r in rows]
        print(f"geomean {label} / cuDNN (isolated): {gm(v):.3f} ({len(v)} layers)")


if __name__ == "__main__":
    main()
