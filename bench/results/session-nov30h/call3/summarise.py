"""Session nov30h: the per-solver summary of budget_remeasure.py's rows (call 3's run stopped before printing it: the
forward tune it was also given had run past its limit; call 5 printed the forward's). Reads remeasure.txt's per-problem
lines: geomean of each budget's re-measured time over the 400 / 100 config's, and how many layers are > 2% slower.

    python bench/results/session-nov30h/call3/summarise.py bench/results/session-nov30h/call3/remeasure.txt
"""
import collections
import math
import re
import sys

rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+): (.*)", line)
    if not m or "=" not in m.group(3):
        continue
    rows[m.group(1)].append({k: float(v) for k, v in (kv.split("=") for kv in m.group(3).split())})
for sid, rs in rows.items():
    ok = [r for r in rs if all(math.isfinite(v) for v in r.values())]
    parts = []
    for n in rs[0]:
        g = math.exp(sum(math.log(r[n] / r["400/100"]) for r in ok) / len(ok))
        parts.append(f"{n}: {g:.3f} ({sum(r[n] > 1.02 * r['400/100'] for r in ok)} >2% slower)")
    print(f"{sid}, {len(ok)} problems, re-measured time / the widest budget's config: " + "; ".join(parts))
