"""The full-DB model with 300 regression trees at learning rate 0.1 (150 LambdaRank trees, default configs), saved to
/tmp/small.model.npz. Run from the repo root."""
import sys; sys.path.insert(0, ".")
from miofind import costmodel as cm
from miofind.db import FindDB
cm.PARAMS["learning_rate"] = 0.1
db = FindDB("finddb/sm_90-132.sqlite", readonly=True, immutable=True)
m = cm.train(cm.samples_from_db(db), rounds=300, default_configs=True)
m.save("/tmp/small.model.npz"); print(len(m.trees.roots))
