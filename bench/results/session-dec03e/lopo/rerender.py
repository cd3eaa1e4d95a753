"""Session dec03e: lopo/seedN/costmodel_eval.md rendered again from its JSON with the perceptron named (the runs
predate eval_costmodel.py's "perceptron" field; their models had the shipped recipe's: costmodel.train's default,
64 x 32). Usage: python rerender.py"""

import json
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
sys.path.insert(0, str(here.parents[2] / "bench"))

from eval_costmodel import render  # noqa: E402
from miofind import costmodel as cm  # noqa: E402

shipped = cm.CostModel.load(here.parents[3] / "finddb" / "sm_90-132.model.npz").meta["perceptron"]
for d in sorted(here.glob("seed*/")):
    rep = json.loads((d / "costmodel_eval.json").read_text())
    rep.setdefault("perceptron", shipped)
    (d / "costmodel_eval.json").write_text(json.dumps(rep, indent=1, sort_keys=True) + "\n")
    (d / "costmodel_eval.md").write_text(render(rep))
    print(d.name, "rendered")
