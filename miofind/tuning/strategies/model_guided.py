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

import logging

from . import guided, model_order

_log = logging.getLogger(__name__)


def search(space, default, evaluate, budget, rng, *, problem=None, solver=None, dbs=None, sm_count=132,
           model=None, **_):
    model = model if model is not None else (model_order.find_model(dbs) if dbs is not None else None)
    order = model_order.order(space, default, model, problem, solver, sm_count)
    if order is None:
        _log.info("%s %s: no config-aware model orders its configs; guided search instead",
                  getattr(solver, "id", "?"), problem.key() if problem is not None else "?")
        return guided.search(space, default, evaluate, budget, rng)
    guided.descend(space, evaluate, budget, order, lambda tried: order)
