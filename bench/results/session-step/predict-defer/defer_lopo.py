"""What deferring the candidates the cost model predicts at least K x slower than its fastest would postpone, on
held-out problems: reads the rows of `python bench/eval_costmodel.py --default-configs --seed 1 --rows ROWS`
(leave one preset out: each preset's problems ranked by a model trained without that preset), leaves out the naive
solvers (a find does), and per K counts the candidates deferred and the problems whose measured-fastest solver would
be among them (its first answer then slower until the background measures it).

    python bench/results/session-step/predict-defer/defer_lopo.py bench/results/session-step/predict-defer/lopo_rows.json.gz
"""
import collections
import gzip
import json
import math
import sys

rows = json.load(gzip.open(sys.argv[1]) if sys.argv[1].endswith(".gz") else open(sys.argv[1]))
print("held-out problems of bench/eval_costmodel.py --default-configs --seed 1 (leave one preset out), naive solvers "
      "left out as in a find")
for K in (1.5, 2, 2.5, 3):
    tot = ndef = nprob = fb = cud = cudd = 0
    lost, per = [], collections.Counter()
    for r in rows:
        if r["fallback"]:
            fb += 1
            continue
        rs = [x for x in r["rows"] if "Naive" not in x[0]]     # (solver, measured, model, today, model place)
        if len(rs) < 2:
            continue
        nprob += 1
        pmin, best = min(x[2] for x in rs), min(x[1] for x in rs)
        kept = [x for x in rs if x[2] < K * pmin]
        tot += len(rs)
        ndef += len(rs) - len(kept)
        cud += sum(1 for x in rs if "Cudnn" in x[0])
        cudd += sum(1 for x in rs if "Cudnn" in x[0] and x not in kept)
        kb = min(x[1] for x in kept)
        if kb > best * 1.0001:
            lost.append(kb / best)
            per[r["held"]] += 1
    g = sum(math.log(x) for x in lost)
    print(f"K={K}: {nprob} problems (model not covering: {fb}); candidates deferred {ndef}/{tot} ({100*ndef/tot:.0f}%; "
          f"cuDNN's {cudd}/{cud}); measured best deferred in {len(lost)} ({100*len(lost)/nprob:.2f}%), mean slowdown of "
          f"the first answer {100*(math.exp(g/nprob)-1):.3f}%, worst {max(lost, default=1):.2f}x; by held-out preset "
          f"{dict(per)}")
