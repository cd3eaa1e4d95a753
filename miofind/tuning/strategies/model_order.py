"""Configs in the order a config-aware cost model predicts them, fastest first, batch by batch.

The first batch is the default config (the tuner re-measures it for ``default_time_ms``, and it
guards against a wrong model) and the model's first picks; the rest follow in the model's order
until the budget ends, as in the other strategies. Equal predictions keep guided's order: nearest
to the default first (the sum of |log2| steps over the parameters).

The model: ``miofind.costmodel.tune_model_for_db``, the config-aware model
(``<db>.tune.model.npz``, written by ``miofind db train-model --configs``) next to the user DB
(trained on one's own fleet's records) else next to the system DB (``finddb/sm_90-132.tune.model.npz``,
trained on the shipped DB's find records and PerfDB tuned and default-config times). A file next to
the DB it learnt from, like immediate mode's model, and not a retrain at tune time: training needs
LightGBM and seconds to minutes, loading needs numpy and tens of ms (issue 20: <= 100 ms), once per
process. Where no model answers for the solver and problem (``costmodel.config_order``: no file, no
config features of the solver, an unknown solver or kind of problem), the search is ``guided``'s,
and the log says so.
"""

from __future__ import annotations

import logging
import math

from . import guided

_log = logging.getLogger(__name__)


def _distance(cfg: dict, default: dict | None) -> float:
    """How far ``cfg`` is from ``default``: |log2 ratio| per positive integer parameter, 1 per other
    difference."""
    if not default:
        return 0.0
    d = 0.0
    for k, a in default.items():
        b = cfg.get(k)
        if b == a:
            continue
        both = isinstance(a, int) and isinstance(b, int) and a > 0 and b > 0
        d += abs(math.log2(a / b)) if both else 1.0
    return d


def find_model(dbs):
    """The config-aware model next to the user DB file, else next to the system DB file (None: none)."""
    from ...costmodel import tune_model_for_db

    for layer in (getattr(dbs, "user", None), getattr(dbs, "system", None)):
        path = getattr(layer, "path", None)
        model = tune_model_for_db(path) if path else None
        if model is not None:
            return model
    return None


def order(space, default, model, problem, solver, sm_count: int = 132) -> list[int] | None:
    """Indices of ``space`` in the order this strategy measures them (the default first), or None
    when ``model`` cannot order the solver's configs on ``problem``."""
    from ...costmodel import config_order

    if model is None or problem is None or solver is None:
        return None
    # guided's order first (nearest to the default), so that equal predictions keep it
    near = sorted(range(len(space)), key=lambda i: _distance(space[i], default))
    ranked = config_order(model, problem, solver, [space[i] for i in near], sm_count)
    if ranked is None:
        return None
    out = [near[i] for i in ranked]
    if default in space:
        d = space.index(default)
        out.remove(d)
        out.insert(0, d)
    return out


def ordered(space, default, problem, solver, dbs, sm_count, model) -> list[int] | None:
    """``order`` by ``model`` (a CostModel, or a stand-in with ``config_keys``, ``supports`` and
    ``predict_ms``), else by ``find_model(dbs)``; None, with the reason logged, where no model orders the
    solver's configs (the strategies of this order then search as ``guided``)."""
    model = model if model is not None else (find_model(dbs) if dbs is not None else None)
    idx = order(space, default, model, problem, solver, sm_count)
    if idx is None:
        why = "no config-aware model" if model is None else "the config-aware model cannot order its configs"
        _log.info("%s %s: %s; guided search instead", getattr(solver, "id", "?"),
                  problem.key() if problem is not None else "?", why)
    else:
        _log.debug("%s %s: %d config(s) in the model's order (model %s)", solver.id, problem.key(), len(idx),
                   getattr(model, "meta", {}).get("version", "?"))
    return idx


def search(space, default, evaluate, budget, rng, *, problem=None, solver=None, dbs=None, sm_count=132,
           model=None, **_):
    """Measure ``space`` in ``ordered``'s order, ``budget.batch`` configs at a time, until the
    budget ends; ``guided.search`` where no model answers."""
    idx = ordered(space, default, problem, solver, dbs, sm_count, model)
    if idx is None:
        return guided.search(space, default, evaluate, budget, rng)
    for i in range(0, len(idx), budget.batch):
        if budget.exhausted():
            return
        evaluate([space[j] for j in idx[i:i + budget.batch]])
