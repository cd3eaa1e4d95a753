"""Which model-preset problems a FindDB answers: per model x batch x type x layout, how many of the
preset's problems (F, B and W) have records, and how many tuned configs the PerfDB holds.

    python3 bench/finddb_coverage.py finddb/sm_90-132.sqlite [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from miofind.db import FindDB  # noqa: E402
from miofind.models import MODELS, model_problems  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with FindDB(a.db, readonly=True) as db:
        keys = set(db.problem_keys())
        perf = {r.problem_key for r in db.iter_perf()}
        st = db.stats()
    lines = ["| model | batch | type | layout | problems with records | with tuned configs |", "| --- | ---: | --- | --- | ---: | ---: |"]
    for m in MODELS:
        for b in (32, 1):
            for dt, lay in (("FP32", "NCHW"), ("FP16", "NHWC"), ("FP32", "NHWC"), ("FP16", "NCHW")):
                ps = [p.key() for p in model_problems(m, batch=b, dtypes=(dt,), layouts=(lay,))]
                have = sum(k in keys for k in ps)
                lines.append(f"| {m} | {b} | {dt} | {lay} | {have}/{len(ps)} | {sum(k in perf for k in ps)} |")
    text = "\n".join(lines) + (f"\n\n{st['records']} find records over {st['problems']} problems, "
                               f"{st['perf_records']} tuned configs, {st['file_bytes']} bytes\n")
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
