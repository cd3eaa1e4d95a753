"""Offline replay of miofind.torch's host-aware choice on the batch-1 forward problems of the three models, from the
shipped DB before and after the refresh: the fastest record, or, where it is cuDNN's (which the C++ path does not
launch), the first of the next three within MIOFIND_TORCH_HOST_US that is not cuDNN. Counts the picks per solver and
the picks the replay swaps (call 4's ``host_aware`` counts are per prepared Entry and also count GEMM entries that the
C++ path could not trace; the replay assumes every non-cuDNN entry launches from C++).

    python bench/results/session-refresh/replay_choice.py <DB before> finddb/sm_90-132.sqlite > replay_choice.txt
"""
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from noise_ceiling import times  # noqa: E402

from miofind.models import model_problems  # noqa: E402


def choose(t, us, tries=3):
    c = sorted((v, s) for s, v in t.items() if "Naive" not in s)
    v0, s0 = c[0]
    if not s0.startswith("ConvCudnn") or us == 0:
        return s0, False
    for v, s in c[1:1 + tries]:
        if v > v0 + us / 1e3:
            break
        if not s.startswith("ConvCudnn"):
            return s, True
    return s0, False


dbs = {"before": times(sys.argv[1]), "after": times(sys.argv[2])}
for dt, lay in (("FP32", "NCHW"), ("FP16", "NHWC")):
    for m in ("resnet50", "mobilenet_v2", "inception_v3"):
        keys = [p.key() for p in model_problems(m, batch=1, dtypes=(dt,), layouts=(lay,)) if p.direction == "F"]
        for arm, t in dbs.items():
            picks = [choose(t[k], 30) for k in keys if k in t]
            dev = sum(dbs["after"][k][s] for k, (s, _) in zip([k for k in keys if k in t], picks)) * 1e3
            c = collections.Counter(s for s, _ in picks)
            print(f"{m:13s} {dt} {arm:6s} {len(picks)} problems, swapped {sum(w for _, w in picks)}, "
                  f"GPU us (after's records) {dev:.0f}: {dict(c.most_common())}")
