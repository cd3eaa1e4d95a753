"""Session nov30d, call 2 (run at commit 3441e71f, whose tree has the cluster split; it was reverted after): why the
cluster split's time grows with SPLITK (call 1). The same tiles timed as the forward's non-persistent configs unsplit
and split through the workspace (SPLITK 1, 2, 4, 8) and as the cluster split (2, 4, 8), isolated kernel time (CUDA
graph replays), on three ResNet-50 layers at N = 32, FP16 NHWC. With --ncu, one run of each of three configs of 1024
-> 512 @14 for an Nsight Compute profile (no timing)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench"), str(ROOT)]
import kernel_timing  # noqa: E402
from shapes import _resnet50  # noqa: E402
from miofind.harness import Harness  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

FWD, CS = get_solver("ConvImplicitGemmHopperFwd"), get_solver("ConvImplicitGemmHopperFwdClusterSplit")
L = _resnet50(32)


def cfg(bm, bn, wgs, sk):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": 4, "PERSIST": 0, "SPLITK": sk, "WSPEC": 1, "TMA": 1,
            "PINGPONG": 0}


if "--ncu" in sys.argv:
    import cupy
    p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **L["r50_1024to512_14_1x1s1"])
    h = Harness(p, verify=False, seed=0)
    for s, c in ((FWD, cfg(128, 128, 2, 1)), (FWD, cfg(128, 128, 2, 4)), (CS, cfg(128, 128, 2, 4))):
        got = kernel_timing.timed_configs(h, p, s, [c], s.family, lambda call, inv, ws: {"call": call, "ws": ws})
        for _, t in got:
            t["call"](cupy.cuda.get_current_stream().ptr)
    cupy.cuda.get_current_stream().synchronize()
    sys.exit(0)

for name in ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1", "r50_512to512_7_3x3s1"):
    p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **L[name])
    h = Harness(p, verify=True, seed=0)
    print(name, flush=True)
    for bm, bn, wgs in ((128, 128, 2), (64, 128, 1)):
        for s, splits in ((FWD, (1, 2, 4, 8)), (CS, (2, 4, 8))):
            cf = [cfg(bm, bn, wgs, k) for k in splits if s.is_valid_config(p, cfg(bm, bn, wgs, k))]
            got = kernel_timing.timed_configs(h, p, s, cf, s.family, lambda call, inv, ws: {"call": call, "ws": ws})
            row = "  ".join(f"{c['SPLITK']}:{kernel_timing.isolated_ms(t['call'], 30) * 1e3:.1f}" for c, t in got)
            print(f"  {bm}x{bn} {s.id[22:] or 'Fwd'}: {row}", flush=True)
