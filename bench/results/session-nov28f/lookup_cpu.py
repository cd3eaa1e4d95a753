"""CPU, no GPU: the host work of a warm find's miss before the benchmark, part by part, as miofind.find._find does it
(fastread's prefetch, the candidates' applicability, the DBs' answer, the fast reads, the recorded times, the order,
the cost model's predicted losers, the child-process check), for bench_cold's 15 layers x F/B/W in FP32 NCHW and FP16
NHWC, against the shipped DB and an empty user DB. The device is named, not asked (sm_90-132); cuDNN's plan prefetch and
cuBLASLt's set-up, which need the GPU, are left out. Three passes; the first includes imports and first loads.

    python bench/results/session-nov28f/lookup_cpu.py > bench/results/session-nov28f/lookup_cpu.txt
"""
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
os.environ.setdefault("MIOFIND_SYSTEM_DB", str(ROOT / "finddb" / "sm_90-132.sqlite"))

from bench_cold import SHAPES  # noqa: E402
from miofind import find as F  # noqa: E402
from miofind.db import fastread  # noqa: E402
from miofind.device import DeviceInfo  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402

dev = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "13.0", "13.0", "14.2.0")
user = os.path.join(tempfile.mkdtemp(), "user.sqlite")


def problems():
    for name, kw in SHAPES.items():
        for dt, lay in (("FP32", "NCHW"), ("FP16", "NHWC")):
            for d in "FBW":
                yield ProblemDescription.make(direction=d, layout=lay, dtype=dt, **kw)


print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start; ms per problem, median / max of 30")
for rep in range(3):
    parts = {}

    def t(name, fn, *a):
        t0 = time.perf_counter()
        r = fn(*a)
        parts.setdefault(name, []).append((time.perf_counter() - t0) * 1e3)
        return r

    for p in problems():
        t0 = time.perf_counter()
        t("prefetch", fastread.prefetch, user, dev)
        cands, _ = t("candidates", F.candidates, p)
        t("db_answer", F.db_answer, user, dev, p, cands, True, None)
        reads = t("fast_reads", F._fast_reads, user, dev)
        rec = t("recorded", F.recorded_times, p, reads, dev)
        cands = t("order", F.expected_order, p, reads, dev, cands, rec)
        t("losers", F.predicted_losers, p, reads, dev, cands, 2.0, rec)
        t("isolate", F.to_isolate, reads, dev, p, cands)
        parts.setdefault("TOTAL", []).append((time.perf_counter() - t0) * 1e3)
    print(f"pass {rep + 1}: " + "  ".join(f"{k} {statistics.median(v):.2f}/{max(v):.1f}" for k, v in parts.items()))
