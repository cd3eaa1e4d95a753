"""The find record the FindDB tests store: one H100 record per (solver, time, problem, device)."""

from __future__ import annotations

from miofind.db import Record

DEV = "sm_90-132"
KEY = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"


def rec(solver: str = "ConvDirectNaiveConvFwd", t: float = 1.0, key: str = KEY, device: str = DEV, **kw) -> Record:
    base = dict(device=device, device_name="NVIDIA H100 80GB HBM3", problem_key=key, solver_id=solver,
                algorithm="miopenConvolutionFwdAlgoDirect", time_ms=t, workspace_bytes=0,
                package_version="0.1.0", kernel_hash="abc", cuda_version="13.0")
    base.update(kw)
    return Record(**base)
