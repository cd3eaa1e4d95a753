"""CPU: what deferring FFT candidates from a lower predicted slowdown than the others would postpone, on held-out
problems. Reads session nov27b's leave-one-preset-out rows (`bench/eval_costmodel.py`, seeds 1-3: each preset's
problems ranked by a model trained without that preset; per candidate its measured and predicted time), leaves out
the naive solvers (a find does), and per (K for every solver, K for the FFT solvers) counts the candidates deferred
and the problems whose measured-fastest solver would be among them (the first answer then slower until the
background measures it). As session-step's defer_lopo.py, with a second factor for the FFT family.

    python bench/results/session-nov29c/defer_fft.py > bench/results/session-nov29c/defer_fft.txt
"""
import collections
import gzip
import json
import math
from pathlib import Path

ROWS = Path(__file__).resolve().parents[1] / "session-nov27b" / "lopo-call6"


def run(rows, k, k_fft):
    tot = ndef = nprob = fft = fft_def = 0
    lost, per = [], collections.Counter()
    for r in rows:
        if r["fallback"]:
            continue
        rs = [x for x in r["rows"] if "Naive" not in x[0]]     # (solver, measured, model, today, model place)
        if len(rs) < 2:
            continue
        nprob += 1
        pmin, best = min(x[2] for x in rs), min(x[1] for x in rs)
        kept = [x for x in rs if x[2] < (k_fft if "FFT" in x[0] else k) * pmin]
        tot += len(rs)
        ndef += len(rs) - len(kept)
        fft += sum("FFT" in x[0] for x in rs)
        fft_def += sum("FFT" in x[0] and x not in kept for x in rs)
        kb = min(x[1] for x in kept)
        if kb > best * 1.0001:
            lost.append(kb / best)
            per[r["held"]] += 1
    g = sum(math.log(x) for x in lost)
    return (f"K={k:g}, FFT {k_fft:g}: {nprob} problems; candidates deferred {ndef}/{tot} ({100 * ndef / tot:.1f}%), FFT "
            f"{fft_def}/{fft}; measured best deferred in {len(lost)} ({100 * len(lost) / nprob:.2f}%), mean slowdown of "
            f"the first answer {100 * (math.exp(g / nprob) - 1):.3f}%, worst {max(lost, default=1):.2f}x {dict(per)}")


for seed in (1, 2, 3):
    rows = json.load(gzip.open(ROWS / f"seed{seed}" / "rows.json.gz"))
    print(f"seed {seed} ({ROWS.name}/seed{seed}/rows.json.gz)")
    for k, kf in ((2, 2), (2, 1.5), (2, 1.3), (2, 1.2), (1.8, 1.8), (1.5, 1.5), (1.3, 1.3)):
        print("  " + run(rows, k, kf))
