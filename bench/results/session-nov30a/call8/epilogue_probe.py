"""Session nov30a, call 8: how much of our persistent 32-deep forward's time on Inception's stems is its epilogue?
The kernel (kernels_src/implicit_gemm_hopper_fwd.cu) is patched in a scratch copy, never in the tree, and timed
without verification (its output is wrong on purpose):

- ``orig``: unpatched;
- ``noglobal``: the consumers stage each tile in shared memory (acc_to_smem) but store nothing to y;
- ``nostore``: neither (one predicated store keeps the accumulators live).

    python epilogue_probe.py VARIANT      (MIOFIND_KERNEL_CACHE: a fresh folder per variant)

Prints, per problem and config, the median of 200 event-timed runs (us) and cuDNN's heuristic plan's beside it."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
BLOCK = """        acc_to_smem(acc, cs, t EPI_PASS(n0));
        consumer_sync();
        store_tile<NT_MMA>(y, cs, m0, n0, t);"""
PATCH = {
    "orig": BLOCK,
    "noglobal": """        acc_to_smem(acc, cs, t EPI_PASS(n0));
        consumer_sync();
        if(cs[t] == (data_t)12345.f) y[t] = cs[t];""",
    "nostore": """        consumer_sync();
        if(acc[0][0] == 12345.f) y[t] = (data_t)acc[0][1];""",
}
CASES = [  # (C, K, H, config): Inception's 32 -> 32 and 32 -> 64 stems at N = 32, pad 1
    (32, 32, 149, {"BM": 256, "BN": 32, "WGS": 2, "STAGES": 6, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2,
                   "PINGPONG": 0}),
    (32, 64, 147, {"BM": 256, "BN": 64, "WGS": 2, "STAGES": 6, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2,
                   "PINGPONG": 0}),
    (32, 32, 149, {"BM": 128, "BN": 32, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2,
                   "PINGPONG": 0}),
]


def main():
    variant = sys.argv[1]
    src = (ROOT / "kernels_src" / "implicit_gemm_hopper_fwd.cu").read_text()
    assert src.count(BLOCK) == 1
    scratch = Path(tempfile.mkdtemp(prefix="ks_"))
    for f in (ROOT / "kernels_src").iterdir():
        shutil.copy(f, scratch / f.name)
    (scratch / "implicit_gemm_hopper_fwd.cu").write_text(src.replace(BLOCK, PATCH[variant]))
    import miofind.compile as mc
    mc._kernels_dir = lambda: scratch
    mc.kernel_source.cache_clear()

    import cupy

    from miofind.invokers import prepare
    from miofind.problem import ProblemDescription

    for c, k, h, cfg in CASES:
        p = ProblemDescription.make("F", n=32, c=c, k=k, in_size=(h, h), filter_size=3, pads=1, layout="NHWC",
                                    dtype="FP16")
        sa, sb, so = p.io_shapes()
        rng = cupy.random.default_rng(0)
        a = rng.uniform(-1, 1, sa, dtype=cupy.float32).astype(cupy.float16)
        b = rng.uniform(-1, 1, sb, dtype=cupy.float32).astype(cupy.float16)
        out = cupy.empty(so, cupy.float16)
        row = {"variant": variant, "problem": p.key(), "config": cfg}
        for name, sid, conf in (("ours", "ConvImplicitGemmHopperFwd", cfg), ("cudnn", "ConvCudnnFwd", None)):
            if name == "cudnn" and variant != "orig":
                continue
            run = prepare(p, sid, conf)
            for _ in range(20):
                run(a, b, out)
            ev = [cupy.cuda.Event() for _ in range(201)]
            ev[0].record()
            for i in range(200):
                run(a, b, out)
                ev[i + 1].record()
            ev[-1].synchronize()
            t = sorted(cupy.cuda.get_elapsed_time(ev[i], ev[i + 1]) * 1e3 for i in range(200))
            row[name + "_us"] = round(t[100], 2)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
