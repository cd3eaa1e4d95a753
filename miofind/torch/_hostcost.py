"""Host time per call of each solver through miofind.torch, for the host-aware choice of ``_policy``.

A model queues its convolutions one after another from Python. Where a layer's kernel is shorter than
the host time of its call, the GPU waits for the host and the call costs its host time; a find ranks
by GPU time alone. So miofind.torch weighs each verified solution by ``max(GPU time, host time per
call)``, and keeps the find's order among equal costs. The host time of a call is miofind.torch's
own per-call work (``call_overhead_us``) plus the solver's launches (``host_us``, per solver id).
Both are measured on the GPU machine by ``bench/bench_host_costs.py`` (``_policy.Entry`` calls with
torch tensors on real layers, drained bursts) and shipped in ``host_us.json``; a solver the table
lacks counts its median. ``MIOFIND_TORCH_HOST_AWARE=0`` ranks by GPU time alone.
"""

from __future__ import annotations

import functools
import json
import os
import statistics

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_us.json")


@functools.lru_cache(maxsize=None)
def table() -> tuple[dict[str, float], float, float]:
    """(host µs per call by solver id, the median of those for other solvers, miofind.torch's per-call
    overhead in µs) from ``host_us.json``; empty with zeros where the file is missing or malformed."""
    try:
        with open(TABLE, encoding="utf-8") as f:
            data = json.load(f)
        per = {str(k): float(v) for k, v in data["host_us"].items() if float(v) >= 0}
        overhead = max(0.0, float(data.get("call_overhead_us", 0.0)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, 0.0, 0.0
    return per, (statistics.median(per.values()) if per else 0.0), overhead


def host_us(solver_id: str) -> float:
    """Host µs of one call of ``solver_id``'s solution through miofind.torch (its launches and the
    per-call overhead); the table's median for a solver it lacks."""
    per, median, overhead = table()
    return overhead + per.get(solver_id, median)


def cost_us(solution) -> float:
    """A solution's estimated cost per call in a model: the larger of its GPU and host time (µs)."""
    return max(solution.time_ms * 1e3, host_us(solution.solver_id))


def order(solutions: list) -> list:
    """``solutions`` (a find's order: fastest GPU time first) sorted by ``cost_us``; the sort is
    stable, so equal costs keep the find's order. Unchanged when the table is empty."""
    if not table()[0]:
        return list(solutions)
    return sorted(solutions, key=cost_us)
