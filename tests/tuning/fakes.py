"""CPU stand-ins for the GPU parts of tuning: a device, a measurer with deterministic times and
failures, and a finder that stores what a benchmark-mode find would."""

from __future__ import annotations

import hashlib
import math
import time

from miofind import __version__
from miofind.db import Record
from miofind.device import DeviceInfo

DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")


def fake_time(solver_id: str, config: dict) -> float:
    """A deterministic time per config; configs whose hash ends in 0 (about 1 in 16) fail."""
    h = int(hashlib.sha256(f"{solver_id}{sorted(config.items())}".encode()).hexdigest(), 16)
    return math.inf if h % 16 == 0 else 0.1 + (h % 1000) / 1000


class FakeMeasurer:
    calls: list = []   # (solver_id, config) of every config measured, across instances

    def __init__(self, problem, delay: float = 0.0):
        self.problem = problem
        self.delay = delay

    def evaluate(self, solver, configs, *, warmup=1, iters=3):
        out = []
        for c in configs:
            FakeMeasurer.calls.append((solver.id, dict(c)))
            if self.delay:
                time.sleep(self.delay)
            t = fake_time(solver.id, c)
            out.append((t, None) if t < math.inf else (t, ("compile", "fake compile error")))
        return out


def fake_finder(dbs, dev=DEV):
    """Stores, for the solver ids asked, the record a find would: the tuned config if any, times 1, 2,
    ... in candidate order. ``find.calls`` lists the ids of each call."""
    from miofind.find import candidates as _candidates
    from miofind.trust import trust_key as kernel_hash, tuned_config

    def find(problem, solver_ids):
        find.calls.append(list(solver_ids))
        cands = _candidates(problem, None)[0]
        recs = [Record(device=dev.db_name, device_name=dev.name, problem_key=problem.key(), solver_id=s.id,
                       algorithm=s.algorithm, time_ms=1.0 + i, workspace_bytes=s.workspace_bytes(problem),
                       config=tuned_config(dbs, dev, problem, s, report=False), verified=True, max_error=1e-7,
                       package_version=__version__, kernel_hash=kernel_hash(s), cuda_version=dev.cuda_version)
                for i, s in enumerate(cands) if s.id in solver_ids]
        dbs.user.store(recs)
    find.calls = []
    return find
