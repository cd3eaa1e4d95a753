"""Configs drawn without replacement (the default first), batch by batch, until the budget ends."""


def search(space, default, evaluate, budget, rng, **_context):
    rest = [c for c in space if c != default]
    rng.shuffle(rest)
    order = ([default] if default in space else []) + rest
    for i in range(0, len(order), budget.batch):
        if budget.exhausted():
            return
        evaluate(order[i:i + budget.batch])
