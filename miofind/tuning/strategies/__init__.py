"""Search strategies, Kernel Tuner style: each module has one function

    search(space, default, evaluate, budget, rng, **context) -> None

``space`` is the list of valid, untried configs (the default first when it is among them);
``evaluate(batch)`` measures a batch of configs (compiled in parallel) and returns their times
(``inf`` for a failure); ``budget.exhausted()`` says when to stop. The tuner keeps the results.
``context``: keywords ``problem``, ``solver``, ``dbs`` (the Overlay) and ``sm_count``, which the
``model`` and ``model_guided`` strategies order by and the others ignore.
"""

from . import exhaustive, guided, model_guided, model_order, random_sample

STRATEGIES = {"exhaustive": exhaustive.search, "random": random_sample.search, "guided": guided.search,
              "model": model_order.search, "model_guided": model_guided.search}
