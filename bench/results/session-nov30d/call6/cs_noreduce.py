"""Session nov30d, call 6: where the cluster split's time goes. On commit 3441e71f's tree (copied to cs_tree/, its
kernel's reduce_cluster call put under #ifndef CS_NOREDUCE), the cluster split at SPLITK 2, 4, 8 with its distributed-
shared-memory reduction and without it (CS_NOREDUCE = 1: the two cluster barriers and the staging only; outputs not
written, so not verified), beside the forward's unsplit non-persistent config, isolated kernel time, on two ResNet-50
layers at N = 32, FP16 NHWC."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
T = ROOT / "cs_tree"
sys.path[:0] = [str(T / "tests"), str(T / "bench"), str(T)]
import kernel_timing  # noqa: E402
from shapes import _resnet50  # noqa: E402
from miofind.harness import Harness  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_fwd_cluster_split as csm  # noqa: E402

assert str(T) in csm.__file__, csm.__file__
FWD, CS = get_solver("ConvImplicitGemmHopperFwd"), get_solver("ConvImplicitGemmHopperFwdClusterSplit")
L = _resnet50(32)
fk = csm.forward_kernels


def noreduce(p, cfg, source, name, overrides=None):
    return fk(p, cfg, source, name, overrides={**(overrides or {}), "CS_NOREDUCE": 1})


for name in ("r50_1024to512_14_1x1s1", "r50_2048to512_7_1x1s1"):
    p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **L[name])
    print(name, flush=True)
    for bm, bn, wgs in ((128, 128, 2), (64, 128, 1)):
        cfg = lambda k: {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": 4, "PERSIST": 0, "SPLITK": k, "WSPEC": 1,  # noqa
                         "TMA": 1, "PINGPONG": 0}
        for label, s, splits, verify in (("fwd", FWD, (1,), True), ("cluster", CS, (2, 4, 8), True),
                                         ("cluster, no reduce", CS, (2, 4, 8), False)):
            csm.forward_kernels = noreduce if label.endswith("no reduce") else fk
            h = Harness(p, verify=verify, seed=0)
            got = kernel_timing.timed_configs(h, p, s, [cfg(k) for k in splits], s.family,
                                              lambda call, inv, ws: {"call": call, "ws": ws})
            row = "  ".join(f"{c['SPLITK']}:{kernel_timing.isolated_ms(t['call'], 30) * 1e3:.1f}" for c, t in got)
            print(f"  {bm}x{bn} {label}: {row}", flush=True)
