"""Leave-one-preset-out rows (``eval_costmodel.py --rows``) scored against two truths from the shipped FindDB: the find
records' times (tuned configs where the PerfDB has them: ``eval_costmodel.py``'s truth) and the default configs' times
(``default_times.py``'s scaling), whichever the run that made the rows trained on. The picks are the rows' (the model's
place 0); ResNet-101's split counts again as ResNet-50's, as ``eval_costmodel.py`` pools; rel. err. is the median
|predicted / true - 1| over every record of the problems the model answered.

``python bench/results/session-dec03a/truths.py <rows.json[.gz]> ...``
"""
import gzip
import json
import sqlite3
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from default_times import default_times  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
c = sqlite3.connect(ROOT / "finddb/sm_90-132.sqlite")
tuned = {(k, s): t for k, s, t in c.execute("select problem_key, solver_id, time_ms from find_records")}
default = dict(tuned)
default.update({(k, s): t for _, k, s, t in default_times(c)})


def score(problems, truth):
    slow, rel = [], []
    for q in problems:
        t = [truth[(q["key"], r[0])] for r in q["rows"]]
        pick = next(i for i, r in enumerate(q["rows"]) if r[4] == 0)
        slow.append(t[pick] / min(t))
        if not q["fallback"]:
            rel += [abs(r[2] / v - 1) for r, v in zip(q["rows"], t)]
    top = sum(s <= 1 + 1e-12 for s in slow) / len(slow)
    return f"{100 * top:.1f}% / {100 * (st.fmean(slow) - 1):.2f}% / {max(slow):.2f}x / {100 * st.median(rel):.1f}%"


print("| rows | problems | against the tuned times | against the default configs' times |")
print("| --- | ---: | --- | --- |")
for path in sys.argv[1:]:
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        problems = json.load(f)
    print(f"| {path} | {len(problems)} | {score(problems, tuned)} | {score(problems, default)} |")
