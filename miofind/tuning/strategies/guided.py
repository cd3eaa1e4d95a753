"""Greedy neighbourhood descent with random restarts.

Start from the default config; each step measures the untried neighbours of the best config so far
(configs differing in one parameter, nearest values first) and moves to the best. When a step
brings no improvement, a random batch of untried configs restarts the search elsewhere.
"""

import math


def _neighbours(cfg, space, tried):
    def dist(c):
        diff = [k for k in cfg if c.get(k) != cfg[k]]
        if len(diff) != 1:
            return None
        k = diff[0]
        a, b = cfg[k], c[k]
        return abs(math.log2(a / b)) if isinstance(a, int) and isinstance(b, int) and a > 0 and b > 0 else 1.0

    near = [(d, i) for i, c in enumerate(space) if i not in tried and (d := dist(c)) is not None]
    return [i for _, i in sorted(near)]


def descend(space, evaluate, budget, first, restart) -> None:
    """Measure ``first`` (indices of ``space``, one batch), then step to the untried neighbours of the
    best so far while a step improves on it; after a step that does not, measure ``restart(tried)``
    (indices; the untried among them, one batch)."""
    tried: set[int] = set()
    times: dict[int, float] = {}

    def run(idx):
        idx = [i for i in idx if i not in tried][:budget.batch]
        got = evaluate([space[i] for i in idx])
        idx = idx[:len(got)]  # the budget may cut a batch short
        tried.update(idx)
        times.update(zip(idx, got))
        return idx

    run(first)
    while not budget.exhausted() and len(tried) < len(space):
        best = min(times, key=times.get)
        before = times[best]
        step = run(_neighbours(space[best], space, tried))
        if step and min(times[i] for i in step) < before:
            continue
        run(restart(tried))


def search(space, default, evaluate, budget, rng, **_context):
    def at_random(tried):
        rest = [i for i in range(len(space)) if i not in tried]
        rng.shuffle(rest)
        return rest

    descend(space, evaluate, budget, [space.index(default) if default in space else 0], at_random)
