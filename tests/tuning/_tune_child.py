"""Child process for the SIGKILL test: tune ResNet-50's forward layers (N=1) into a SQLite DB with
the fake measurer (a few ms per config, so a kill lands mid-tune).

argv: db_path outcomes_jsonl calls_jsonl. Appends one JSON line per finished problem and one per
measured config, flushed at once.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def main() -> int:
    db_path, outcomes, calls = sys.argv[1:4]
    import fakes
    from miofind.db import FindDB
    from miofind.db.system import Overlay
    from miofind.models import model_problems
    from miofind.tuning import Tuner, TuneOptions

    log = open(calls, "a", buffering=1)

    class Logged(fakes.FakeMeasurer):
        def evaluate(self, solver, configs, **kw):
            for c in configs:
                log.write(json.dumps([self.problem.key(), solver.id, c]) + "\n")
            return super().evaluate(solver, configs, **kw)

    with FindDB(db_path) as user:
        dbs = Overlay(user)
        t = Tuner(dbs, fakes.DEV, TuneOptions(strategy="random", max_configs=12, seed=0),
                  measurer=lambda p: Logged(p, delay=0.002), finder=fakes.fake_finder(dbs))
        with open(outcomes, "a", buffering=1) as fh:
            for p in model_problems("resnet50", batch=1, directions="F"):
                o = t.tune_problem(p)
                fh.write(json.dumps({"key": o.key, "status": o.status}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
