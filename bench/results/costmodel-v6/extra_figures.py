"""Figures NOTES.md quotes beyond misses.md: python bench/results/costmodel-v6/extra_figures.py > .../extra_figures.txt"""
import gzip
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from miofind.db import FindDB  # noqa: E402

HERE = Path(__file__).parent
for run in ("baseline", "baseline-nobf16"):
    d = json.loads(gzip.decompress((HERE / run / "rows.json.gz").read_bytes()))
    print(f"== {run}")
    for fb in (True, False):
        rel = [abs(r[2] / r[1] - 1) for e in d if e["fallback"] == fb for r in e["rows"]]
        print(f"median rel. err. over records of problems {'today answers (fallback)' if fb else 'the model answers'}: "
              f"{100 * np.median(rel):.1f}% of {len(rel)} records")
    q = json.loads(gzip.decompress((HERE / run / "misses.json.gz").read_bytes()))
    s = np.array([x["slow"] for x in q])
    for lo, hi in ((1, 1.1), (1.1, 1.5), (1.5, 1e9)):
        m = (s > lo + 1e-12) & (s <= hi)
        print(f"misses in ({lo}, {hi}]x: {m.sum()}, sum of excess {(s[m] - 1).sum():.2f}")
    for n in (1, 32):
        v = [x["slow"] for x in q if x["n"] == n and not x["fallback"]]
        print(f"N={n}: {len(v)} problems the model answers, mean slowdown {100 * (np.mean(v) - 1):.2f}%")
d = [e for e in json.loads(gzip.decompress((HERE / "baseline" / "rows.json.gz").read_bytes())) if e["held"] != "resnet101"]
g = np.array([sorted(r[1] for r in e["rows"])[1] / min(r[1] for r in e["rows"]) for e in d])
for b in (1.02, 1.05, 1.10):
    print(f"runner-up within {b}x of the fastest: {100 * (g <= b).mean():.1f}% of {len(g)} problems")
db = FindDB(str(ROOT / "finddb" / "sm_90-132.sqlite"), readonly=True, immutable=True)
find = {(r.problem_key, r.solver_id): r for r in db.iter_records(None)}
rat = np.array([find[(p.problem_key, p.solver_id)].time_ms / p.time_ms for p in db.iter_perf(None)
                if (p.problem_key, p.solver_id) in find and find[(p.problem_key, p.solver_id)].config == p.config])
print(f"find / PerfDB time of the same config, {len(rat)} entries: 5th/50th/95th percentile "
      f"{np.quantile(rat, 0.05):.3f} / {np.median(rat):.3f} / {np.quantile(rat, 0.95):.3f}; over 1.5x: {(rat > 1.5).sum()}")
