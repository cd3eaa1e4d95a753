"""Pooled leave-one-preset-out figures of this session's variants, per seed and averaged over seeds:
``python bench/results/session-dec03a/compare.py`` (reads ``lopo/<variant>/seedN/costmodel_eval.json``)."""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent / "lopo"
KEYS = (("top1", 100, "%"), ("mean_slowdown", 100, "%"), ("worst_slowdown", 1, "x"), ("median_rel_err", 100, "%"))


def cells(m):
    return " | ".join(f"{m[k] * f:.{1 if k != 'mean_slowdown' and u == '%' else 2}f}{u}" for k, f, u in KEYS)


print("| variant | seed | top-1 | mean slowdown | worst | median rel. err. | today's top-1 |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for var in sorted(p.name for p in HERE.iterdir() if p.is_dir()):
    runs = []
    for seed in sorted((HERE / var).glob("seed*")):
        rep = json.loads((seed / "costmodel_eval.json").read_text())
        runs.append(rep["pooled"])
        today = 100 * rep["pooled"]["today"]["top1"]
        print(f"| {var} | {seed.name[4:]} | {cells(rep['pooled']['model'])} | {today:.1f}% |")
    if len(runs) > 1:
        mean = {k: statistics.fmean(r["model"][k] for r in runs) for k, _, _ in KEYS}
        today = statistics.fmean(r["today"]["top1"] for r in runs)
        print(f"| **{var}** | mean of {len(runs)} | {cells(mean)} | {100 * today:.1f}% |")
