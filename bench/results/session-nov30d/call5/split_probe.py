"""Session nov30d, call 5: does a split stop growing with its chunks where blocks share an SM? The forward's
non-persistent configs unsplit and split through the workspace (SPLITK 1, 2, 4, 8), isolated kernel time (CUDA graph
replays), at tiles whose blocks fit one, two or more to an SM (blocks_per_sm, the kernel's MIN_BLOCKS), on two
ResNet-50 layers at N = 32, FP16 NHWC."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench"), str(ROOT)]
import kernel_timing  # noqa: E402
from shapes import _resnet50  # noqa: E402
from miofind.harness import Harness  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.solvers.implicit_gemm_hopper_base import blocks_per_sm  # noqa: E402

FWD = get_solver("ConvImplicitGemmHopperFwd")
L = _resnet50(32)
TILES = ((128, 128, 2, 4, 1), (64, 128, 1, 4, 1), (64, 64, 1, 4, 1), (64, 64, 1, 3, 1), (128, 64, 2, 3, 0),
         (64, 64, 1, 3, 0), (64, 128, 1, 3, 0))

for name in ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1"):
    p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **L[name])
    h = Harness(p, verify=True, seed=0)
    print(name, flush=True)
    for bm, bn, wgs, st, tm in TILES:
        cf = [{"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 0, "SPLITK": k, "WSPEC": tm, "TMA": tm,
               "PINGPONG": 0} for k in (1, 2, 4, 8)]
        cf = [c for c in cf if FWD.is_valid_config(p, c)]
        if not cf:
            continue
        got = kernel_timing.timed_configs(h, p, FWD, cf, FWD.family, lambda call, inv, ws: {"call": call, "ws": ws})
        row = "  ".join(f"{c['SPLITK']}:{kernel_timing.isolated_ms(t['call'], 30) * 1e3:.1f}" for c, t in got)
        print(f"  {bm}x{bn} WGS {wgs} ST {st} TMA {tm}, {blocks_per_sm(p, cf[0])} a SM: {row}", flush=True)
