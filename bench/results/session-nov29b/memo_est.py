"""CPU, no GPU (the device named): per problem of bench_cold's 30 rows, the deferral check of its own configs
(``find.defer_candidates``) and the solution work the find's preparation then repeats for each (``get_solution``,
``is_compiled``, ``tiered._generic_solution``; no build). Three passes.

    python bench/results/session-nov29b/memo_est.py > bench/results/session-nov29b/memo_est.txt
"""
import os, sys, tempfile, time, statistics
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / 'bench')]
os.environ.setdefault("MIOFIND_SYSTEM_DB", str(ROOT / "finddb" / "sm_90-132.sqlite"))
os.environ["MIOFIND_KERNEL_CACHE"] = tempfile.mkdtemp()
from miofind import device as D
dev = D.DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "13.0", "13.0", "14.2.0")
D.current_device = lambda device_id=None: dev
from bench_cold import DTYPES, SHAPES, problem
from miofind import find as F, tiered
from miofind.compile import is_compiled
F.current_device = lambda: dev
user = os.path.join(tempfile.mkdtemp(), "user.sqlite")
for rep in range(3):
    a, b = [], []
    for s in SHAPES:
        for dt in DTYPES:
            for d in "FBW":
                p = problem(s, dt, d)
                cands, _ = F.candidates(p)
                reads = F._fast_reads(user, dev)
                todo = [(c, cfg) for c in cands if c.family != "cudnn" for cfg in F.find_configs(reads, dev, p, c, c.configs_now)]
                t0 = time.perf_counter(); F.defer_candidates(p, todo); a.append((time.perf_counter()-t0)*1e3)
                t0 = time.perf_counter()
                for c, cfg in todo:
                    try:
                        sol = c.get_solution(p, cfg)
                        if not all(is_compiled(k) for k in sol.kernels):
                            tiered._generic_solution(p, c, cfg)
                    except Exception:
                        pass
                b.append((time.perf_counter()-t0)*1e3)
    print(f"pass {rep}: deferral {statistics.median(a):.2f} ms, prepare's solution work {statistics.median(b):.2f} ms (median per problem)")
