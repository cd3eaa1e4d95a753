"""Guided descent seeded and restarted by a config-aware cost model.

The first batch is the default config and the model's first picks (as ``model``); then each step
measures the untried neighbours of the best config so far (as ``guided``: one parameter changed,
nearest values first) and moves to the best. When a step brings no improvement, the next untried
configs in the model's order restart the search, where ``guided`` takes a random batch. The model
finds the right region of the space (its ranking reaches implicit GEMM's best in one batch where
guided needs two or three); the descent finds the best config in that region, which the model's
ranking alone reaches late (tiled direct: after 112-128 configs against guided's 28-41,
``bench/results/tune-order/gpu/``). Where no model answers, the search is ``guided``'s.
"""

from __future__ import annotations

from . import guided, model_order


def search(space, default, evaluate, budget, rng, *, problem=None, solver=None, dbs=None, sm_count=132,
           model=None, **_):
    order = model_order.ordered(space, default, problem, solver, dbs, sm_count, model)
    if order is None:
        return guided.search(space, default, evaluate, budget, rng)
    guided.descend(space, evaluate, budget, order, lambda tried: order)
