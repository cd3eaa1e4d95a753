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
