"""CPU, no GPU (the device named), with session nov29b's prepared memo_find.patch applied: per problem of
bench_cold's 30 rows, the deferral check of its own configs and the solution work of their preparation before any
build (specialised solution, binary-cache lookups, generic solution), without and with the find's ``Solutions``
memo, alternating problem by problem. Three passes.

    git apply bench/results/session-nov29b/prepared/memo_find.patch
    python bench/results/session-nov29b/prepared/memo_cpu.py > bench/results/session-nov29b/prepared/memo_cpu.txt
"""
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
os.environ.setdefault("MIOFIND_SYSTEM_DB", str(ROOT / "finddb" / "sm_90-132.sqlite"))
os.environ["MIOFIND_KERNEL_CACHE"] = tempfile.mkdtemp()

from miofind import device as D  # noqa: E402

dev = D.DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "13.0", "13.0", "14.2.0")
D.current_device = lambda device_id=None: dev

from bench_cold import DTYPES, SHAPES, problem  # noqa: E402
from miofind import find as F, tiered  # noqa: E402
from miofind.compile import is_compiled  # noqa: E402

F.current_device = lambda: dev
user = os.path.join(tempfile.mkdtemp(), "user.sqlite")


def work(p, todo, memo):
    F.defer_candidates(p, todo, memo=memo)
    for c, cfg in todo:
        try:
            sol = memo.specialised(p, c, cfg) if memo else c.get_solution(p, cfg)
            if not all(is_compiled(k) for k in sol.kernels):
                memo.generic(p, c, cfg) if memo else tiered._generic_solution(p, c, cfg)
        except Exception:       # noqa: BLE001  as the find's preparation reports it
            pass


for rep in range(3):
    got = {"without": [], "with": []}
    for s in SHAPES:
        for dt in DTYPES:
            for d in "FBW":
                p = problem(s, dt, d)
                cands, _ = F.candidates(p)
                reads = F._fast_reads(user, dev)
                todo = [(c, cfg) for c in cands if c.family != "cudnn"
                        for cfg in F.find_configs(reads, dev, p, c, c.configs_now)]
                for side in (("without", "with") if len(got["with"]) % 2 == 0 else ("with", "without")):
                    t0 = time.perf_counter()
                    work(p, todo, tiered.Solutions() if side == "with" else None)
                    got[side].append((time.perf_counter() - t0) * 1e3)
    print(f"pass {rep + 1}: median ms a problem without the memo {statistics.median(got['without']):.2f}, with it "
          f"{statistics.median(got['with']):.2f}; mean {statistics.mean(got['without']):.2f} / "
          f"{statistics.mean(got['with']):.2f}")
