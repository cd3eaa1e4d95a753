"""Call 5's user DB (ResNet-50 TF32 channels_last training, every problem found on the H200): per direction, the
fastest verified record's solver, and where the new W solvers were measured, their time against the fastest other and
cuDNN's. Usage: python picks.py r/user_db.sqlite"""
import collections
import sqlite3
import sys

c = sqlite3.connect(sys.argv[1])
rows = c.execute("select problem_key, solver_id, time_ms from find_records where verified=1").fetchall()
by = collections.defaultdict(dict)
for k, s, t in rows:
    by[k][s] = min(t, by[k].get(s, 1e30))
wins = collections.defaultdict(collections.Counter)
new = ("ConvImplicitGemmHopperWrwTf32Rn", "ConvImplicitGemmHopperWrwTf32RnNchw")
for k, d in sorted(by.items()):
    direction = k.rsplit("-", 1)[1][0]
    best = min(d, key=d.get)
    wins[direction][best] += 1
    if direction == "W":
        nt = min((d[s] for s in new if s in d), default=None)
        other = min((t for s, t in d.items() if s not in new), default=None)
        cud = d.get("ConvCudnnWrw")
        print(f"{k:<70} best {best:<34} new {nt if nt is None else round(nt * 1e3, 1)} us  "
              f"others' best {other if other is None else round(other * 1e3, 1)} us  cuDNN {cud if cud is None else round(cud * 1e3, 1)} us")
for d in "FBW":
    print(d, dict(wins[d]))
