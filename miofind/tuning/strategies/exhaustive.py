"""Every config of the pruned space, in order (the default first), batch by batch, until the budget ends."""


def search(space, default, evaluate, budget, rng, **_context):
    for i in range(0, len(space), budget.batch):
        if budget.exhausted():
            return
        evaluate(space[i:i + budget.batch])
