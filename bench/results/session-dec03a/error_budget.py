"""How accurate must a predictor's times be for issue 20's targets, on the leave-one-preset-out test problems?

Reads an ``eval_costmodel.py --rows`` file (plain or gzipped JSON). A simulated predictor states each record's
measured time times exp(e), e drawn from N(0, sigma) independently per record, and picks its fastest. Only the error
within a problem moves a pick (a problem-wide factor does not), so each row also states the median |e - mean e over
the problem's records|; the same figure for the learned model's predictions comes first. Problems today's predictor
answered (``fallback``) and ResNet-101's split (ResNet-50's) are left out. Seeded; three draws per problem.

A measurement's own within-problem error, for scale: ``--again A B`` (two FindDB files, plain SQLite) prints the same
median between their records of the problems both hold, as a predictor that states A's times would have against B.

``python bench/results/session-dec03a/error_budget.py <rows.json[.gz]> [--again A.sqlite B.sqlite ...]``
"""
import collections
import gzip
import json
import math
import random
import sqlite3
import statistics as st
import sys
from pathlib import Path

path = sys.argv[1]
opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
with opener(path, "rt") as f:
    problems = [q for q in json.load(f) if q["held"] != "resnet101" and not q["fallback"]]


def within(logs):
    m = st.fmean(logs)
    return [abs(v - m) for v in logs]


model_err = [e for q in problems for e in within([math.log(r[2] / r[1]) for r in q["rows"]])]
gaps = sorted(sorted(r[1] for r in q["rows"])[1] / min(r[1] for r in q["rows"]) for q in problems if len(q["rows"]) > 1)
print(f"{len(problems)} problems; the model's median |within-problem log error|: {st.median(model_err):.3f}")
print("runner-up within 3% / 5% / 10% / 20% of the fastest: "
      + " / ".join(f"{100 * sum(g < x for g in gaps) / len(gaps):.1f}%" for x in (1.03, 1.05, 1.10, 1.20)))
args = sys.argv[2:]
while args[:1] == ["--again"] and len(args) >= 3:
    times = []
    for db in args[1:3]:
        c = sqlite3.connect(db)
        times.append({(k, s): t for k, s, t in c.execute("select problem_key, solver_id, time_ms from find_records")})
    per = collections.defaultdict(list)
    for k, t in times[0].items():
        if k in times[1] and t > 0 and times[1][k] > 0:
            per[k[0]].append(math.log(t / times[1][k]))
    errs = [e for v in per.values() if len(v) > 1 for e in within(v)]
    print(f"{Path(args[1]).name} against {Path(args[2]).name}: {len(per)} problems, median |within-problem log "
          f"error| {st.median(errs):.4f}")
    args = args[3:]
print("| sigma | median within-problem error | top-1 | mean slowdown | worst |")
print("| ---: | ---: | ---: | ---: | ---: |")
rng = random.Random(1)
for sigma in (0.01, 0.02, 0.03, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20):
    hits, slow, errs = 0, [], []
    for _ in range(3):
        for q in problems:
            t = [r[1] for r in q["rows"]]
            e = [rng.gauss(0, sigma) for _ in t]
            errs += within(e)
            i = min(range(len(t)), key=lambda j: math.log(t[j]) + e[j])
            hits += t[i] == min(t)
            slow.append(t[i] / min(t))
    print(f"| {sigma:.2f} | {st.median(errs):.3f} | {100 * hits / len(slow):.1f}% | {100 * (st.fmean(slow) - 1):.2f}% "
          f"| {max(slow):.2f}x |")
