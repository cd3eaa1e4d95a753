"""Session nov30f, call 3: what bounds the Hopper W kernel's unsplit copy-engine tiles on ResNet-50's 1x1 stride-1 W
layers at 14 x 14 and 7 x 7 (FP16 NHWC, N = 32), where cuBLASLt's nvjet GEMM (clusters of two) takes 0.70-0.75 of our
time? Call 1: pairs sharing dy by multicast were slower; call 2 (ncu): they moved only 6.5% fewer L2 bytes. Here a
scratch copy of kernels_src/implicit_gemm_hopper_wrw.cu (written to kernels_src/ for the run, removed after; never in
the tree) with PROBE = 1: the consumers wait for each stage and release it at once, no wgmma (the copies alone);
PROBE = 2: the producer arrives on each stage's full barrier without copying (the wgmma alone, on stale shared memory).
Per config, the kernel as built (verified against the float64 reference), PROBE 1 and PROBE 2 (not verified), beside
cuBLASLt's default place and cuDNN's plans, isolated and back to back in a graph, medians of 3 interleaved passes.

    python w_bounds.py OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

SCRATCH = "probe_wrw_bounds.cu"
EDITS = (
    # PROBE 2: the producer's stage completes with a plain arrival (the full barrier counts one), no copies
    ("                mbar_expect_tx(bar, STAGE_BYTES);\n",
     "#if PROBE == 2\n                mbar_arrive(bar);\n                continue;\n#endif\n"
     "                mbar_expect_tx(bar, STAGE_BYTES);\n"),
    # PROBE 1: the consumers release each stage as soon as it is full, no wgmma
    ("            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));\n",
     "            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));\n"
     "#if PROBE == 1\n            mbar_arrive(empty0 + s * 8);\n            continue;\n#endif\n"),
)
LAYERS = ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1", "r50_512to2048_7_1x1s1", "r50_256to1024_14_1x1s1")
BASE = {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1, "RG": 4}
CFGS = (BASE, dict(BASE, STAGES=4), dict(BASE, BN=128), dict(BASE, BM=128, WGS=2), dict(BASE, BM=128, WGS=1))


def main():
    src = (ROOT / "kernels_src" / "implicit_gemm_hopper_wrw.cu").read_text()
    for old, new in EDITS:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    (ROOT / "kernels_src" / SCRATCH).write_text(src)
    try:
        run()
    finally:
        (ROOT / "kernels_src" / SCRATCH).unlink(missing_ok=True)


def run():
    import kernel_timing as kt
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers.implicit_gemm_hopper_wrw import ImplicitGemmHopperWrw
    from shapes import _resnet50

    W = get_solver("ConvImplicitGemmHopperWrw")

    class Probe(ImplicitGemmHopperWrw):
        id = "ProbeHopperWrwBounds"
        source = SCRATCH
        mode = 0

        def get_solution(self, problem, config=None):
            sol = super().get_solution(problem, config)
            ks = [dataclasses.replace(k, macros=k.macros + (("PROBE", str(self.mode)),)) for k in sol.kernels]
            return dataclasses.replace(sol, kernels=ks)

    G, C = get_solver("GemmWrw1x1_stride1"), get_solver("ConvCudnnWrw")
    rows = []
    for name in LAYERS:
        p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
        h = Harness(p, verify=True, seed=0)
        keep = lambda call, inv, ws: {"call": call, "ws": ws}  # noqa: E731
        entries = []
        for c in CFGS:
            if not W.is_valid_config(p, c):
                continue
            entries += [{"kind": "ours", "cfg": c, **t} for c, t in kt.timed_configs(h, p, W, [c], W.family, keep)]
            for mode in (1, 2):
                pr = Probe()
                pr.mode = mode
                sol = pr.get_solution(p, c)
                inv = build_invoker(p, sol)
                ws = h.workspace(sol.workspace_bytes)
                pa, pb, po, pw = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr
                entries.append({"kind": f"probe{mode}", "cfg": c, "ws": ws,
                                "call": lambda s_, inv=inv, pw=pw: inv(pa, pb, po, pw, s_)})
        entries += [{"kind": "gemm", "cfg": c, **t} for c, t in kt.timed_configs(h, p, G, [{"LT": 0}], G.family, keep)]
        entries += [{"kind": "cudnn", "cfg": c, **t} for c, t in kt.timed_configs(h, p, C, None, "cudnn", keep)]
        for _ in range(3):
            for e in entries:
                e.setdefault("iso", []).append(kt.isolated_ms(e["call"], 30) * 1e3)
                e.setdefault("gpu", []).append(kt.graph_ms(e["call"], 30) * 1e3)
        for e in entries:
            e.pop("call"), e.pop("ws")
            e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
        cud = min(e["iso_us"] for e in entries if e["kind"] == "cudnn")
        gem = min(e["iso_us"] for e in entries if e["kind"] == "gemm")
        print(f"\n{name}: cuDNN {cud:.1f} us, cuBLASLt {gem:.1f} (isolated); per config: kernel / copies only / wgmma "
              f"only, isolated (back to back)", flush=True)
        for c in CFGS:
            got = {e["kind"]: e for e in entries if e["cfg"] == c}
            if "ours" in got:
                print("  " + " / ".join(f"{got[k]['iso_us']:.1f} ({got[k]['gpu_us']:.1f})" for k in
                                        ("ours", "probe1", "probe2") if k in got)
                      + f"  {c['BM']}x{c['BN']} wgs {c['WGS']} st {c['STAGES']}", flush=True)
        rows.append({"layer": name, "key": p.key(), "entries": entries})
        del h
        Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
