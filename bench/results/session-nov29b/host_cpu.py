"""CPU, no GPU (the device named, not asked): the host work of a warm find's miss before it prepares anything, part by
part, with its config listing and deferral check (``find_configs`` of each own solver, ``defer_candidates``) beside
session nov28f's lookup_cpu.py parts, for bench_cold's 30 rows, against the shipped DB and an empty user DB and an
empty kernel cache (an unseen shape's specialised kernels are never compiled). Three passes; the first includes
imports and first loads.

    python bench/results/session-nov29b/host_cpu.py > bench/results/session-nov29b/host_cpu.txt
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
os.environ["MIOFIND_KERNEL_CACHE"] = tempfile.mkdtemp()

from miofind import device as D  # noqa: E402

dev = D.DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "13.0", "13.0", "14.2.0")
D.current_device = lambda device_id=None: dev      # the kernel cache's checks ask for the device's architecture

from bench_cold import DTYPES, SHAPES, problem  # noqa: E402
from miofind import find as F  # noqa: E402
from miofind.db import fastread  # noqa: E402

F.current_device = lambda: dev
user = os.path.join(tempfile.mkdtemp(), "user.sqlite")
print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start; ms per problem, median / max of 30")
for rep in range(3):
    parts: dict = {}

    def t(name, fn, *a, **k):
        t0 = time.perf_counter()
        r = fn(*a, **k)
        parts.setdefault(name, []).append((time.perf_counter() - t0) * 1e3)
        return r

    for s in SHAPES:
        for dt in DTYPES:
            for d in "FBW":
                p = problem(s, dt, d)
                t0 = time.perf_counter()
                t("prefetch", fastread.prefetch, user, dev)
                cands, _ = t("candidates", F.candidates, p)
                t("db_answer", F.db_answer, user, dev, p, cands, True, None)
                reads = t("fast_reads", F._fast_reads, user, dev)
                rec = t("recorded", F.recorded_times, p, reads, dev)
                cands = t("order", F.expected_order, p, reads, dev, cands, rec)
                t("losers", F.predicted_losers, p, reads, dev, cands, 2.0, rec)
                t("isolate", F.to_isolate, reads, dev, p, cands)
                todo = []
                for c in cands:
                    if c.family != "cudnn":
                        todo += [(c, cfg) for cfg in t("configs", F.find_configs, reads, dev, p, c, c.configs_now)]
                t("defer", F.defer_candidates, p, todo)
                parts.setdefault("TOTAL", []).append((time.perf_counter() - t0) * 1e3)
    # "configs" is per solver: summed per problem below
    n = len(parts["TOTAL"])
    per = {k: (v if len(v) == n else None) for k, v in parts.items()}
    cfg = parts["configs"]
    print(f"pass {rep + 1}: " + "  ".join(f"{k} {statistics.median(v):.2f}/{max(v):.1f}" for k, v in per.items() if v)
          + f"  configs (per solver) {statistics.median(cfg):.2f}/{max(cfg):.1f}, summed {sum(cfg) / n:.2f} a problem")
