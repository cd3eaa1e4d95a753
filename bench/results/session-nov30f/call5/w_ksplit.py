"""Session nov30f, call 5: would two consumer warpgroups taking alternate j tiles of one 64-row tile (a K split inside
the block, each with its own accumulators) speed up the Hopper W kernel's wgmma on ResNet-50's 1x1 stride-1 W layers
at 14 x 14 and 7 x 7 (FP16 NHWC, N = 32)? Call 3: the 64 x 64 tile's wgmma alone takes 13.9 us back to back on
1024 -> 512 @14, 2.2x the shared-memory bound of its 98 j tiles (each m64n64k16 reads 4 KB in 32 clocks), above
cuBLASLt's whole GEMM (12.5 us). A scratch copy of kernels_src/implicit_gemm_hopper_wrw.cu (written to kernels_src/
for the run, removed after; never in the tree) with KSPLIT = 1: WGS = 2 consumer warpgroups, each the whole BM x BN
tile (WG_M = BM / 64) on j tiles wg, wg + 2, ...; each stage released by its one warpgroup; the second warpgroup's
sums are not added (the output is wrong: timing only). With call 3's probes (PROBE 1: copies only; PROBE 2: wgmma
only). Per config, one consumer warpgroup (as built) and KSPLIT, kernel / PROBE 1 / PROBE 2, isolated and back to back,
medians of 3 interleaved passes, beside cuBLASLt's default place and cuDNN's plans.

    python w_ksplit.py OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

SCRATCH = "probe_wrw_ksplit.cu"
EDITS = (
    ("#define WG_M (BM / (64 * WGS))\n",
     "#ifndef KSPLIT\n#define KSPLIT 0\n#endif\n#define WG_M (KSPLIT ? BM / 64 : BM / (64 * WGS))\n"),
    ('static_assert(BM % (64 * WGS) == 0 && (WG_M == 1 || WG_M == 2), "BM = 64 * WGS * (1 or 2)");\n',
     'static_assert(KSPLIT || (BM % (64 * WGS) == 0 && (WG_M == 1 || WG_M == 2)), "BM = 64 * WGS * (1 or 2)");\n'),
    ("            mbar_init(empty0 + s * 8, NT_MMA);\n", "            mbar_init(empty0 + s * 8, KSPLIT ? 128 : NT_MMA);\n"),
    ("                mbar_expect_tx(bar, STAGE_BYTES);\n",
     "#if PROBE == 2\n                mbar_arrive(bar);\n                continue;\n#endif\n"
     "                mbar_expect_tx(bar, STAGE_BYTES);\n"),
    ("""        for(int kt = 0; kt < nt; ++kt)
        {
            const int s = kt % STAGES;
            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));
            const u32 sa = sbase + s * STAGE_BYTES;
            mma_tile(acc, sa, sa + A_BYTES, wg);
            wgmma_wait<1>();                 // tile kt - 1's wgmma has completed: release its stage
            if(kt > 0)
                mbar_arrive(empty0 + ((kt - 1) % STAGES) * 8);
        }
""", """#if KSPLIT
        for(int kt = wg; kt < nt; kt += 2)
        {
            const int s = kt % STAGES;
            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));
#if PROBE == 1
            mbar_arrive(empty0 + s * 8);
            continue;
#endif
            const u32 sa = sbase + s * STAGE_BYTES;
            mma_tile(acc, sa, sa + A_BYTES, 0);
            wgmma_wait<1>();
            if(kt >= 2)
                mbar_arrive(empty0 + ((kt - 2) % STAGES) * 8);
        }
#else
        for(int kt = 0; kt < nt; ++kt)
        {
            const int s = kt % STAGES;
            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));
#if PROBE == 1
            mbar_arrive(empty0 + s * 8);
            continue;
#endif
            const u32 sa = sbase + s * STAGE_BYTES;
            mma_tile(acc, sa, sa + A_BYTES, wg);
            wgmma_wait<1>();                 // tile kt - 1's wgmma has completed: release its stage
            if(kt > 0)
                mbar_arrive(empty0 + ((kt - 1) % STAGES) * 8);
        }
#endif
"""),
)
LAYERS = ("r50_1024to512_14_1x1s1", "r50_256to1024_14_1x1s1", "r50_512to2048_7_1x1s1", "r50_2048to512_7_1x1s1")
BASE = {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1, "RG": 4}
CFGS = (BASE, dict(BASE, BN=128), dict(BASE, BM=128), dict(BASE, STAGES=6))


def write_scratch():
    src = (ROOT / "kernels_src" / "implicit_gemm_hopper_wrw.cu").read_text()
    for old, new in EDITS:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    (ROOT / "kernels_src" / SCRATCH).write_text(src)


def probe_class():
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw
    from miofind.solvers.implicit_gemm_hopper_wrw import ImplicitGemmHopperWrw

    class Probe(ImplicitGemmHopperWrw):
        id = "ProbeHopperWrwKsplit"
        source = SCRATCH
        mode, ksplit = 0, 0

        def get_solution(self, problem, config=None):
            cfg = dict(config, WGS=2) if self.ksplit else config
            threads = wrw.threads
            if self.ksplit:
                wrw.threads = lambda c: 384
                type(self).tile_ok = staticmethod(lambda p, c: True)
            try:
                sol = super().get_solution(problem, cfg)
            finally:
                wrw.threads = threads
                type(self).tile_ok = staticmethod(wrw.config_ok)
            extra = (("PROBE", str(self.mode)),) + ((("KSPLIT", "1"),) if self.ksplit else ())
            ks = [dataclasses.replace(k, macros=k.macros + extra) for k in sol.kernels]
            return dataclasses.replace(sol, kernels=ks)
    return Probe


def main():
    write_scratch()
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
    from shapes import _resnet50

    Probe = probe_class()
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
            for ks in (0, 1):
                for mode in (0, 1, 2):
                    if ks == 0 and mode == 0:       # the kernel as built: verified
                        got = kt.timed_configs(h, p, W, [c], W.family, keep)
                        entries += [{"kind": "k0_p0", "cfg": c, **t} for _, t in got]
                        continue
                    pr = Probe()
                    pr.mode, pr.ksplit = mode, ks
                    sol = pr.get_solution(p, c)
                    inv = build_invoker(p, sol)
                    ws = h.workspace(sol.workspace_bytes)
                    pa, pb, po, pw = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0 if ws is None else ws.data.ptr
                    entries.append({"kind": f"k{ks}_p{mode}", "cfg": c, "ws": ws,
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
        gem = [e for e in entries if e["kind"] == "gemm"][0]
        print(f"\n{name}: cuDNN {cud:.1f} us, cuBLASLt {gem['iso_us']:.1f} ({gem['gpu_us']:.1f}); per config, one "
              f"consumer warpgroup | KSPLIT: kernel / copies only / wgmma only, isolated (back to back)", flush=True)
        for c in CFGS:
            got = {e["kind"]: e for e in entries if e["cfg"] == c}
            line = " | ".join(" / ".join(f"{got[k]['iso_us']:.1f} ({got[k]['gpu_us']:.1f})" if k in got else "-"
                                         for k in (f"k{ks}_p0", f"k{ks}_p1", f"k{ks}_p2")) for ks in (0, 1))
            print(f"  {line}  {c['BM']}x{c['BN']} st {c['STAGES']}", flush=True)
        rows.append({"layer": name, "key": p.key(), "entries": entries})
        del h
        Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
