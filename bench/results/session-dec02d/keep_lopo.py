"""What MIOFIND_PREDICT_KEEP would postpone on held-out problems, beside MIOFIND_PREDICT_DEFER=2: reads the rows of
`python bench/eval_costmodel.py --default-configs --seed 1 --rows ROWS` (leave one preset out: each preset's problems
ranked by a model trained without that preset; bench/results/session-step/predict-defer/lopo_rows.json.gz), leaves
out the naive solvers (a find does), defers the candidates predicted at least 2x slower than the predicted fastest
(1.3x for FFT), then keeps every cuDNN candidate and the own ones predicted fastest up to KEEP candidates in all (at
least one own), as `find.predicted_deferrals` does. Per KEEP: candidates measured at once per problem, and the problems
whose measured-fastest solver is postponed (the first answer is then slower until the background measures it).

    python bench/results/session-dec02d/keep_lopo.py bench/results/session-step/predict-defer/lopo_rows.json.gz
"""
import collections
import gzip
import json
import math
import sys

rows = json.load(gzip.open(sys.argv[1]) if sys.argv[1].endswith(".gz") else open(sys.argv[1]))
print("held-out problems of bench/eval_costmodel.py --default-configs --seed 1 (leave one preset out), naive solvers "
      "left out as in a find; MIOFIND_PREDICT_DEFER=2 (FFT 1.3) in every line")
for keep in (0, 4, 3, 2):
    nprob = tot = kept_n = 0
    lost, per, big = [], collections.Counter(), collections.Counter()
    for r in rows:
        if r["fallback"]:
            continue
        rs = [x for x in r["rows"] if "Naive" not in x[0]]     # (solver, measured, model, today, model place)
        if len(rs) < 2:
            continue
        nprob += 1
        pmin, best = min(x[2] for x in rs), min(x[1] for x in rs)
        left = sorted((x for x in rs if x[2] < (1.3 if "FFT" in x[0] else 2.0) * pmin), key=lambda x: x[2])
        if keep:
            own = [x for x in left if "Cudnn" not in x[0]]
            room = max(keep - (len(left) - len(own)), 1)
            left = [x for x in left if "Cudnn" in x[0]] + own[:room]
        tot += len(rs)
        kept_n += len(left)
        if len(rs) >= 4:
            big[len(left)] += 1
        kb = min(x[1] for x in left)
        if kb > best * 1.0001:
            lost.append(kb / best)
            per[r["held"]] += 1
    g = sum(math.log(x) for x in lost)
    print(f"KEEP={keep}: {nprob} problems; measured at once {kept_n / nprob:.2f} of {tot / nprob:.2f} candidates a "
          f"problem (problems with 4+ candidates, by how many measured: {dict(sorted(big.items()))}); measured best "
          f"postponed in {len(lost)} ({100 * len(lost) / nprob:.2f}%), mean slowdown of the first answer "
          f"{100 * (math.exp(g / nprob) - 1):.3f}%, worst {max(lost, default=1):.2f}x; by held-out preset {dict(per)}")
