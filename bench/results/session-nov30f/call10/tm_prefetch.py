"""Session nov30f, call 10: does prefetching the tensor maps at kernel start (``prefetch.tensormap``, as CUTLASS's
producers do) shorten the Hopper W and F kernels' fill? Call 5 put the W kernel's time on the 7 x 7 1x1 layers at
about fill + 25 j tiles of wgmma + epilogue, the fill some 1.5 us; no Hopper kernel prefetches its maps today. Scratch
copies of kernels_src/implicit_gemm_hopper_wrw.cu and implicit_gemm_hopper_fwd.cu (written to kernels_src/ for the run,
removed after; never in the tree) whose thread 0 prefetches both maps first thing (copy-engine builds only). On
ResNet-50's W and F layers (FP16 NHWC, N = 32), each solver's find configs, as built and with the prefetch (verified
against the float64 reference), isolated and back to back, medians of 3 interleaved passes.

    python tm_prefetch.py OUT.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

PF = """#if TMA
    if(threadIdx.x == 0)     // the maps' descriptors fetched ahead of the first copy
    {{
        asm volatile("prefetch.tensormap [%0];\\n" ::"l"(reinterpret_cast<unsigned long long>(&{a})) : "memory");
        asm volatile("prefetch.tensormap [%0];\\n" ::"l"(reinterpret_cast<unsigned long long>(&{b})) : "memory");
    }}
#endif
"""
SCRATCH = {
    "W": ("implicit_gemm_hopper_wrw.cu", "probe_wrw_pf.cu",
          "    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;\n    grid_dep_launch();",
          PF.format(a="tmdy", b="tmx")),
    "F": ("implicit_gemm_hopper_fwd.cu", "probe_fwd_pf.cu",
          "    grid_dep_launch();      // a programmatic dependent (the next stride phase, the reduce) may start\n",
          PF.format(a="tmx", b="tmw")),
}


def write_scratch():
    for d, (src, dst, anchor, pf) in SCRATCH.items():
        s = (ROOT / "kernels_src" / src).read_text()
        assert s.count(anchor) == 1, (d, anchor)
        (ROOT / "kernels_src" / dst).write_text(s.replace(anchor, anchor + "\n" + pf if d == "W" else anchor + pf))


def main():
    write_scratch()
    try:
        run()
    finally:
        for _, dst, _, _ in SCRATCH.values():
            (ROOT / "kernels_src" / dst).unlink(missing_ok=True)


def run():
    import kernel_timing as kt
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    rows = []
    for d, sid in (("W", "ConvImplicitGemmHopperWrw"), ("F", "ConvImplicitGemmHopperFwd")):
        S = get_solver(sid)
        Probe = type("Probe" + d, (type(S),), {"id": "ProbeTmPrefetch" + d, "source": SCRATCH[d][1]})
        P = Probe()
        for name, kw in _resnet50(32).items():
            p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **kw)
            if not S.applicability(p):
                continue
            cfgs = [S.config_of(p, c) for c in S.find_configs(p)]
            cfgs = [c for i, c in enumerate(cfgs) if c.get("TMA") and c not in cfgs[:i]]
            if not cfgs:
                continue
            h = Harness(p, verify=True, seed=0)
            keep = lambda call, inv, ws: {"call": call, "ws": ws}  # noqa: E731
            ents = [{"kind": "orig", "cfg": c, **t} for c, t in kt.timed_configs(h, p, S, cfgs, S.family, keep)]
            ents += [{"kind": "pf", "cfg": c, **t} for c, t in kt.timed_configs(h, p, P, cfgs, S.family, keep)]
            for _ in range(3):
                for e in ents:
                    e.setdefault("iso", []).append(kt.isolated_ms(e["call"], 30) * 1e3)
                    e.setdefault("gpu", []).append(kt.graph_ms(e["call"], 30) * 1e3)
            for e in ents:
                e.pop("call"), e.pop("ws")
                e["iso_us"], e["gpu_us"] = statistics.median(e["iso"]), statistics.median(e["gpu"])
            b = {k: {m: min(e[m] for e in ents if e["kind"] == k) for m in ("iso_us", "gpu_us")} for k in ("orig", "pf")}
            print(f"{d} {name:26s} {len(cfgs)} configs; best as built / with the prefetch: isolated "
                  f"{b['orig']['iso_us']:.1f} / {b['pf']['iso_us']:.1f} us, back to back {b['orig']['gpu_us']:.1f} / "
                  f"{b['pf']['gpu_us']:.1f}", flush=True)
            rows.append({"dir": d, "layer": name, "key": p.key(), "entries": ents, "best": b})
            del h
            Path(sys.argv[1]).write_text(json.dumps(rows, indent=0))
    for d in ("W", "F"):
        for m in ("iso_us", "gpu_us"):
            v = [r["best"]["pf"][m] / r["best"]["orig"][m] for r in rows if r["dir"] == d]
            if v:
                print(f"geomean {d} best with the prefetch / as built, {m[:-3]}: "
                      f"{math.exp(sum(map(math.log, v)) / len(v)):.3f} ({len(v)} layers; min {min(v):.3f}, max {max(v):.3f})")


if __name__ == "__main__":
    main()
