"""Session nov30f, call 4: do multicast pairs raise the rate at which the Hopper W kernel's copies reach the SMs?
Call 3: on 1024 -> 512 @14 (FP16 NHWC, N = 32) the 64 x 64 tile's copies alone take 16.1 us back to back and its wgmma
alone 14.0, against cuBLASLt's whole nvjet GEMM (clusters of two) at 12.5: 1.6 MB a block in 16.1 us, 100 GB/s an SM,
12.8 TB/s over 128 SMs; nvjet's SMs receive the same bytes at 114 GB/s. If L2's output is the bound, a pair that reads
its shared dy tile once (multicast) should move the copies faster. A scratch copy (kernels_src/, removed after the run;
never in the tree) of the multicast kernel of commit 7f707d0b (MC = 2: two adjacent N tiles of one M tile as a
cluster, each block copying half of the dy tile's pixels to both) with call 3's probes (PROBE 1: copies only, each stage
released by every consumer warp of both blocks as soon as it is full; PROBE 2: wgmma only). Per config, unpaired and
paired, the kernel (verified against the float64 reference) and PROBE 1 and 2, isolated and back to back, medians of 3
interleaved passes, beside cuBLASLt's default place and cuDNN's plans. (The kernel source is
``implicit_gemm_hopper_wrw_mc.cu.txt`` beside this file.)

    python w_bounds_mc.py OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

SCRATCH = "probe_wrw_bounds_mc.cu"
EDITS = (
    ("                mbar_expect_tx(bar, STAGE_BYTES);\n",
     "#if PROBE == 2\n                mbar_arrive(bar);\n                continue;\n#endif\n"
     "                mbar_expect_tx(bar, STAGE_BYTES);\n"),
    ("            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));\n",
     "            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));\n"
     "#if PROBE == 1\n            release_stage(empty0 + s * 8);\n            continue;\n#endif\n"),
)
LAYERS = ("r50_1024to512_14_1x1s1", "r50_256to1024_14_1x1s1", "r50_512to2048_7_1x1s1")
BASE = {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1, "RG": 4}
CFGS = (BASE, dict(BASE, STAGES=4), dict(BASE, BN=128), dict(BASE, BM=128, WGS=2))


def main():
    src = (Path(__file__).parent / "implicit_gemm_hopper_wrw_mc.cu.txt").read_text()    # git show 7f707d0b:kernels_src/...
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
    from miofind import tma as tma_mod
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from miofind.solvers.implicit_gemm_hopper_wrw import ImplicitGemmHopperWrw
    from shapes import _resnet50

    class TmaShim:       # the W module's tma: dy's map (the module's only TiledSpec) boxes 32 pixels for a pair
        half = False

        def __getattr__(self, name):
            return getattr(tma_mod, name)

        def TiledSpec(self, dtype, dims, strides, box, *a):  # noqa: N802
            return tma_mod.TiledSpec(dtype, dims, strides, (box[0], box[1] // 2) if self.half else box, *a)
    shim = TmaShim()
    wrw.tma = shim

    class Probe(ImplicitGemmHopperWrw):
        id = "ProbeHopperWrwBoundsMc"
        source = SCRATCH
        mode, mc = 0, 1

        def get_solution(self, problem, config=None):
            shim.half = self.mc == 2
            try:
                sol = super().get_solution(problem, config)
            finally:
                shim.half = False
            extra = (("PROBE", str(self.mode)),) + ((("MC", "2"),) if self.mc == 2 else ())
            ks = [dataclasses.replace(k, macros=k.macros + extra) for k in sol.kernels]
            return dataclasses.replace(sol, kernels=ks)

    W = get_solver("ConvImplicitGemmHopperWrw")
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
            for mc in (1, 2):
                for mode in (0, 1, 2):
                    pr = Probe()
                    pr.mode, pr.mc = mode, mc
                    if mode == 0:       # the kernel as built: verified
                        got = kt.timed_configs(h, p, pr, [c], W.family, keep)
                        entries += [{"kind": f"mc{mc}_p0", "cfg": c, **t} for _, t in got]
                        continue
                    sol = pr.get_solution(p, c)
                    inv = build_invoker(p, sol)
                    ws = h.workspace(sol.workspace_bytes)
                    pa, pb, po, pw = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr
                    entries.append({"kind": f"mc{mc}_p{mode}", "cfg": c, "ws": ws,
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
        print(f"\n{name}: cuDNN {cud:.1f} us, cuBLASLt {gem:.1f} (isolated); per config, unpaired | paired: kernel / "
              f"copies only / wgmma only, isolated (back to back)", flush=True)
        for c in CFGS:
            got = {e["kind"]: e for e in entries if e["cfg"] == c}
            line = " | ".join(" / ".join(f"{got[k]['iso_us']:.1f} ({got[k]['gpu_us']:.1f})" if k in got else "-"
                                         for k in (f"mc{mc}_p0", f"mc{mc}_p1", f"mc{mc}_p2")) for mc in (1, 2))
            print(f"  {line}  {c['BM']}x{c['BN']} wgs {c['WGS']} st {c['STAGES']}", flush=True)
        rows.append({"layer": name, "key": p.key(), "entries": entries})
        del h
        Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
