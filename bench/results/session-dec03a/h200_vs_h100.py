"""Per solver, the H200's time over the shipped DB's (H100) on session sweep's 240 resample problems, as session
dec02e's call 4 found them twice on an H200 (pass a against the DB; pass a against pass b for the noise):
whether H200 records can stand in for H100 ones as training data.

``python bench/results/session-dec03a/h200_vs_h100.py``
"""
import gzip
import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CALL4 = ROOT / "bench/results/session-dec02e/call4"


def load(path, tmp):
    if path.suffix == ".gz":
        with gzip.open(path) as src, open(Path(tmp) / path.stem, "wb") as dst:
            shutil.copyfileobj(src, dst)
        path = Path(tmp) / path.stem
    with closing(sqlite3.connect(path)) as c:
        return {(k, s): t for k, s, t in c.execute("select problem_key, solver_id, time_ms from find_records")}


with tempfile.TemporaryDirectory() as tmp:
    a, b = load(CALL4 / "a.sqlite.gz", tmp), load(CALL4 / "b.sqlite.gz", tmp)
    db = load(ROOT / "finddb/sm_90-132.sqlite", tmp)


def q(v, f):
    return v[int(f * (len(v) - 1))]


print("| solver | records | H200 / H100: q10 | median | q90 | H200 pass a / pass b: q10 | median | q90 |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
solvers = sorted({s for _, s in a}, key=lambda s: (-sum(1 for k in a if k[1] == s and k in db), s))
for s in solvers:
    r = sorted(t / db[k] for k, t in a.items() if k[1] == s and k in db)
    n = sorted(t / b[k] for k, t in a.items() if k[1] == s and k in b)
    if len(r) >= 5:
        print(f"| {s} | {len(r)} | {q(r, .1):.2f} | {q(r, .5):.2f} | {q(r, .9):.2f} | {q(n, .1):.2f} | {q(n, .5):.2f} "
              f"| {q(n, .9):.2f} |")
