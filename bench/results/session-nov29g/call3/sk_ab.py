"""Session nov29g call 3: why the stream-K forward lost in call 2. Kernel time (bench/kernel_timing.py: isolated =
one call captured in a CUDA graph, replayed between events; graph = 50 calls back to back in one graph) of the
Hopper forward and the stream-K kernel on the same buffers, FP16 NHWC, outputs checked against the forward's:
  fwd        ConvImplicitGemmHopperFwd at its default (persistent copy-engine) config, and at 128 x 128 (WGS 2);
  sk0/1/2    the stream-K kernel at 128 x 128 with SK_DP = 0 (stream-K over all tiles), 1 (whole tiles in waves,
             stream-K over the last one to two waves' worth), 2 (whole tiles in the forward's order, a control:
             the same work as fwd 128 x 128 plus the counter-clearing launch);
  sk0 64     SK_DP = 0 at 64 x 128 (one consumer warpgroup: half the slot bytes).
Usage: python sk_ab.py OUT.json"""
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "bench"))
import cupy  # noqa: E402
import kernel_timing as kt  # noqa: E402
from miofind.invokers import build_invoker  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.verify import random_array  # noqa: E402

FWD = get_solver("ConvImplicitGemmHopperFwd")
SK = get_solver("ConvImplicitGemmHopperFwdStreamK")
PROBLEMS = {
    "vgg_256_56_3x3": dict(n=32, c=256, k=256, in_size=(56, 56), filter_size=3, pads=1),
    "r50_2048to512_7": dict(n=32, c=2048, k=512, in_size=(7, 7), filter_size=1),
    "r50_1024to512_14": dict(n=32, c=1024, k=512, in_size=(14, 14), filter_size=1),
    "r50_1024to256_14": dict(n=32, c=1024, k=256, in_size=(14, 14), filter_size=1),
    "r50_128to512_28": dict(n=32, c=128, k=512, in_size=(28, 28), filter_size=1),
    "r50_64_56_3x3": dict(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1),
    "r50_512_7_3x3": dict(n=32, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
}


def with_macro(sol, name, value):
    ks = [dataclasses.replace(k, macros=tuple(m for m in k.macros if m[0] != name) + ((name, str(value)),))
          for k in sol.kernels]
    return dataclasses.replace(sol, kernels=ks)


def main():
    out = {}
    for name, kw in PROBLEMS.items():
        p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **kw)
        rng = cupy.random.default_rng(1)
        sa, sb, so = p.io_shapes()
        a, b = random_array(sa, "FP16", rng), random_array(sb, "FP16", rng)
        d = FWD.default_config(p)
        t128 = dict(d, BM=128, BN=d["BN"], WGS=2, PINGPONG=0)
        sides = {"fwd": (FWD, d, None), "fwd128": (FWD, t128, None)}
        skc = SK.default_config(p)
        for mode in (0, 1, 2):
            sides[f"sk{mode}"] = (SK, skc, mode)
        sides["sk0_64"] = (SK, dict(skc, BM=64, WGS=1), 0)
        row, ref = {}, None
        for side, (s, cfg, mode) in sides.items():
            try:
                sol = s.get_solution(p, cfg)
                if mode is not None:
                    sol = with_macro(sol, "SK_DP", mode)
                inv = build_invoker(p, sol)
                ws = cupy.full(max(sol.workspace_bytes, 1), 0xFF, dtype=cupy.uint8)
                y = cupy.full(so, cupy.nan, dtype=a.dtype)
                fn = lambda st, inv=inv, y=y, ws=ws, sol=sol: inv(  # noqa: E731
                    a.data.ptr, b.data.ptr, y.data.ptr, ws.data.ptr if sol.workspace_bytes else 0, st)
                fn(cupy.cuda.get_current_stream().ptr)
                cupy.cuda.get_current_stream().synchronize()
                if ref is None:
                    ref = y.astype(cupy.float32)
                diff = float(cupy.abs(y.astype(cupy.float32) - ref).max() / cupy.abs(ref).max())
                nan = int(cupy.isnan(y).sum())
                row[side] = dict(config=cfg, iso_us=1e3 * kt.isolated_ms(fn, 60), graph_us=1e3 * kt.graph_ms(fn, 50),
                                 max_rel_diff_vs_fwd=diff, nan=nan)
            except Exception as e:  # noqa: BLE001
                row[side] = dict(config=cfg, error=f"{type(e).__name__}: {str(e)[:300]}")
            print(name, side, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row[side].items()
                               if k != "config"}, flush=True)
        out[name] = row
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
