"""Replaying a search strategy on known times: which configs it would measure, in which order, and
after how many measurements it reaches the best (configs-to-best).

The times come from an exhaustive sweep (``bench/tune_order_gpu.py``) or a synthetic rule (tests);
the strategy runs exactly as in the tuner (``Budget``, batches, ``evaluate`` cut to the budget's
room) with ``evaluate`` answering from the table instead of the GPU.
"""

from __future__ import annotations

import math
import random

from .strategies import STRATEGIES
from .tuner import Budget, TuneOptions


def replay(strategy: str, space: list[dict], times: list[float], *, batch: int = 16, seed: int = 0,
           max_configs: int | None = None, patience: int | None = None, **context) -> list[list[int]]:
    """The batches of indices of ``space`` that ``strategy`` measures when config ``i`` takes
    ``times[i]`` ms (``inf``: failed), under a budget of ``max_configs`` and ``patience`` (none: until
    the space is spent). ``space[0]`` is the default, as in the tuner. ``context``: the strategy's
    keywords (``problem``, ``solver``, ``model``, ``sm_count``)."""
    if len(times) != len(space):
        raise ValueError(f"times: {len(times)} values for a space of {len(space)} configs")
    index = {id(c): i for i, c in enumerate(space)}
    budget = Budget(TuneOptions(max_configs=max_configs, patience=patience, batch=batch), len(space))
    batches: list[list[int]] = []

    def evaluate(configs):
        idx = [index[id(c)] for c in configs[:budget.room()]]
        batches.append(idx)
        got = [times[i] for i in idx]
        budget.note(got)
        return got

    STRATEGIES[strategy](space, space[0], evaluate, budget, random.Random(seed), **context)
    return batches


def configs_to(batches: list[list[int]], times: list[float], within: float = 0.0) -> dict:
    """How many configs were measured until one within ``within`` (0.02: 2%) of the best of ``times``
    was: ``config`` counts up to and including that config, ``batch`` to the end of its batch (a
    batch is compiled and measured together). None for both when the replay never reached it."""
    finite = [t for t in times if t < math.inf]
    if not finite:
        return {"config": None, "batch": None}
    goal = min(finite) * (1 + within)
    done = 0
    for b in batches:
        for j, i in enumerate(b):
            if times[i] <= goal:
                return {"config": done + j + 1, "batch": done + len(b)}
        done += len(b)
    return {"config": None, "batch": None}


def replay_trace(trace: list, checks: list, *, max_configs: int | None = None, patience: int | None = None,
                 max_seconds: float | None = None, run_options: dict | None = None) -> dict:
    """Where a tighter budget would have stopped a search that was run: ``trace`` and ``checks`` are a tune's
    ``Outcome.trace`` ((seconds, ms or None, config) per measured config, in order) and ``Outcome.checks``
    ((configs tried, seconds) at each of the budget's stop questions). A strategy reads its budget only through those
    questions (and ``room``, which cuts a batch at ``max_configs``), so with the same seed a search under a tighter
    budget measures a prefix of the same configs: the one this returns, as {"tried", "best_ms", "best_config",
    "seconds"} (the last measured config's batch time; best None where every config of the prefix failed). The best
    is the search's own one-shot time, before the tuner's re-measure of the near-best configs. ``run_options``
    (the run's TuneOptions as JSON): ValueError where a budget asked for is looser than the run's, which the trace
    cannot answer."""
    ro = run_options or {}
    for name, v in (("max_configs", max_configs), ("patience", patience), ("max_seconds", max_seconds)):
        r = ro.get(name)
        if r is not None and (v is None or v > r):
            raise ValueError(f"{name}={v!r}: looser than the run's {r!r}; a trace answers tighter budgets only")
    stop = len(trace) if max_configs is None else min(len(trace), max_configs)
    best, since = math.inf, 0
    qs = iter(checks)
    q = next(qs, None)
    for i in range(stop + 1):
        # the budget's questions asked after i configs were measured (several where a batch came back empty)
        while q is not None and q[0] == i:
            if (max_seconds is not None and q[1] >= max_seconds) or (patience is not None and since >= patience):
                stop = i
                break
            q = next(qs, None)
        if i == stop:
            break
        t = math.inf if trace[i][1] is None else trace[i][1]
        if t < best:
            best, since = t, 0
        else:
            since += 1
    pre = trace[:stop]
    ok = [(e[1], j) for j, e in enumerate(pre) if e[1] is not None]
    b = min(ok) if ok else None
    return {"tried": stop, "best_ms": b[0] if b else None, "best_config": pre[b[1]][2] if b else None,
            "seconds": pre[-1][0] if pre else 0.0}
