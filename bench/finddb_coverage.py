"""Which model-preset problems a FindDB answers: per model x batch x type x layout, how many of the
preset's problems (F, B and W) have records; how many of those where implicit GEMM applies hold its
tuned config, and the geometric-mean speedup of those configs over the default config (both timed in
the tuning run that stored them); and for the other tunable solvers, the (problem, solver) pairs with
a find record (the solver applied on the GPU host that filled the DB) and how many of those hold a
tuned config (the rest run their default config). cuDNN is left out: every find searches its plans.
A second table gives, per tunable solver over the whole DB, its tuned configs and their speedup over
the default config (geometric mean, and how many are >2% faster than the default).

    python3 bench/finddb_coverage.py finddb/sm_90-132.sqlite [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from miofind.db import FindDB  # noqa: E402
from miofind.models import MODELS, model_problems  # noqa: E402
from miofind.registry import get_solver, solvers  # noqa: E402
from miofind.report import gmean, tuning_gains  # noqa: E402

IGEMM = {"F": "ConvImplicitGemmFwd", "B": "ConvImplicitGemmBwd", "W": "ConvImplicitGemmWrw"}
# cuDNN's plans are searched by every find (up to 8 each), so it is not counted as untuned here
OTHER = [s for s in solvers() if s.tunable and s.id not in IGEMM.values() and s.family != "cudnn"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with FindDB(a.db, readonly=True) as db:
        keys = set(db.problem_keys())
        perf = {(r.problem_key, r.solver_id): r for r in db.iter_perf()}
        found = {(r.problem_key, r.solver_id) for r in db.iter_records()}
        st = db.stats()
    lines = ["| model | batch | type | layout | problems with records | implicit GEMM tuned / applicable | tuned vs default (geomean) | other tunable solvers tuned / applicable |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for m in MODELS:
        for b in (32, 1):
            for dt, lay in (("FP32", "NCHW"), ("FP16", "NHWC"), ("FP32", "NHWC"), ("FP16", "NCHW")):
                probs = model_problems(m, batch=b, dtypes=(dt,), layouts=(lay,))
                have = sum(p.key() in keys for p in probs)
                ig = [(p.key(), IGEMM[p.direction]) for p in probs if get_solver(IGEMM[p.direction]).applicability(p).ok]
                tuned = [perf[k] for k in ig if k in perf]
                other = [(p.key(), s.id) for p in probs for s in OTHER if (p.key(), s.id) in found]
                gain = tuning_gains(tuned)
                lines.append(f"| {m} | {b} | {dt} | {lay} | {have}/{len(probs)} | {len(tuned)}/{len(ig)} | {f'{gmean(gain):.3f}x' if gain else '-'} | "
                             f"{sum(k in perf for k in other)}/{len(other)} |")
    lines += ["", "| solver | tuned configs | tuned vs default (geomean) | >2% faster than default | best speedup |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for s in [get_solver(i) for i in IGEMM.values()] + OTHER:
        recs = [r for (_, sid), r in perf.items() if sid == s.id]
        gain = tuning_gains(recs)
        if recs:
            lines.append(f"| {s.id} | {len(recs)} | {f'{gmean(gain):.3f}x' if gain else '-'} | "
                         f"{sum(g > 1.02 for g in gain)}/{len(gain)} | {f'{max(gain):.2f}x' if gain else '-'} |")
    text = "\n".join(lines) + (f"\n\n{st['records']} find records over {st['problems']} problems, "
                               f"{st['perf_records']} tuned configs, {st['file_bytes']} bytes\n")
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
