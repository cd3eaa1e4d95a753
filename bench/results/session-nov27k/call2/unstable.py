"""The find records of a FindDB whose timed runs spread widely (q80 > SPREAD x q20; verified records with quantiles):
prints them, and with --keys OUT writes their problems' keys (a JSON list) for scripts/add-solver-records --keys.
python3 unstable.py DB [--spread 1.2] [--keys OUT]"""
import argparse, json, sqlite3

ap = argparse.ArgumentParser()
ap.add_argument("db")
ap.add_argument("--spread", type=float, default=1.2)
ap.add_argument("--keys")
a = ap.parse_args()
c = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
rows = c.execute("select problem_key, solver_id, time_ms, time_q20_ms, time_q80_ms from find_records "
                 "where verified = 1 and time_q20_ms > 0 and time_q80_ms > ? * time_q20_ms order by problem_key",
                 (a.spread,)).fetchall()
n = c.execute("select count(*) from find_records").fetchone()[0]
best = dict(c.execute("select problem_key, min(time_ms) from find_records where verified = 1 group by problem_key"))
print(f"{len(rows)} of {n} records with q80 > {a.spread} x q20")
for k, s, t, q20, q80 in rows:
    print(f"  {k} {s}: median {t:.4f} ms, q20 {q20:.4f}, q80 {q80:.4f}; problem's best {best[k]:.4f}")
keys = sorted({r[0] for r in rows})
print(f"{len(keys)} problems")
if a.keys:
    json.dump(keys, open(a.keys, "w"), indent=0)
