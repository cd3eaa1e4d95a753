"""Session dec03b (issue 20, CPU): a cuDNN margin over the shipped model's immediate-mode pick. The pick becomes cuDNN
unless the model's own pick is predicted at least m faster. Scored as top-1 / mean slowdown / worst on two sets:
- session dec03a's calls 2-3 (3538 random layers neither model trained on, `call2/sweep.sqlite.gz`,
  `call3/sweep23.sqlite.gz`), ranked by the shipped model;
- dec03a's leave-one-preset-out rows of the shipped recipe (`lopo/sweep/seedN/rows.json.gz`).

    python bench/results/session-dec03b/cudnn_margin.py > bench/results/session-dec03b/cudnn_margin.txt
"""
import collections
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from miofind import costmodel as cm  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

DEC03A = ROOT / "bench/results/session-dec03a"
MARGINS = (None, 0.0, 0.05, 0.1, 0.2, 0.5, 1e9)   # None: the model's pick as shipped; 1e9: cuDNN always


def pick(rows, margin):
    """rows: (solver, measured ms, predicted ms, the model's place). The model's first, or cuDNN's candidate where
    the model's first is an own solver predicted less than ``margin`` faster than it."""
    first = min(rows, key=lambda r: r[3])
    cudnn = [r for r in rows if "Cudnn" in r[0]]
    if margin is not None and cudnn and first not in cudnn and first[2] * (1 + margin) > cudnn[0][2]:
        return cudnn[0]
    return first


def score(problems, margin):
    slow = [pick(rows, margin)[1] / min(r[1] for r in rows) for rows in problems]
    n = len(slow)
    return (f"{100 * sum(s <= 1.0000001 for s in slow) / n:.1f}% / {100 * (sum(slow) / n - 1):.2f}% / "
            f"{max(slow):.2f}x")


def random_layers():
    model = cm.CostModel.load(ROOT / "finddb/sm_90-132.model.npz")
    finds = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for gz in (DEC03A / "call2/sweep.sqlite.gz", DEC03A / "call3/sweep23.sqlite.gz"):
            db = Path(tmp) / gz.name.removesuffix(".gz")
            with gzip.open(gz) as src, open(db, "wb") as dst:
                shutil.copyfileobj(src, dst)
            for r in FindDB(str(db), readonly=True, immutable=True).iter_records(None):
                finds[r.problem_key].append(r)
    groups = collections.defaultdict(list)
    for key, recs in finds.items():
        p = cm.parse_problem_key(key)
        recs = [r for r in recs if "Naive" not in r.solver_id]
        solvers = [get_solver(r.solver_id) for r in recs]
        if len(recs) < 2 or not model.supports(p, [s.id for s in solvers]):
            continue
        times, order = model.rank(p, [(s, cm.default_config(s, p)) for s in solvers])
        place = {i: j for j, i in enumerate(order)}
        rows = [(r.solver_id, r.time_ms, t, place[i]) for i, (r, t) in enumerate(zip(recs, times))]
        groups[f"{p.dtype}-{p.direction}"].append(rows)
        groups["all"].append(rows)
    return model.version, groups


version, groups = random_layers()
print(f"random layers (session dec03a calls 2-3), model {version}: {len(groups['all'])} problems ranked, "
      f"{sum(any('Cudnn' in r[0] for r in rows) for rows in groups['all'])} with a cuDNN candidate")
names = ["all"] + sorted(g for g in groups if g != "all")
print("| margin | " + " | ".join(names) + " |")
print("| --- |" + " --- |" * len(names))
for m in MARGINS:
    print(f"| {m} | " + " | ".join(score(groups[g], m) for g in names) + " |")

print("\nleave-one-preset-out rows of the shipped recipe (the model's problems; fallback ones left out)")
print("| seed | problems | " + " | ".join(str(m) for m in MARGINS) + " |")
print("| --- | ---: |" + " --- |" * len(MARGINS))
for seed in (1, 2, 3):
    rows = json.load(gzip.open(DEC03A / f"lopo/sweep/seed{seed}/rows.json.gz"))
    probs = [[(x[0], x[1], x[2], x[4]) for x in q["rows"]] for q in rows if not q["fallback"]]
    print(f"| {seed} | {len(probs)} | " + " | ".join(score(probs, m) for m in MARGINS) + " |")
