"""Marks every find record of the problems in KEYS (a JSON list) untrusted in a FindDB file (kernel_hash prefixed
"stale:") and prints the add-solver-records arguments naming their solvers, as session-cw/call6/stale_r50.py does for
ResNet-50's 138 keys.
python3 stale_keys.py DB KEYS"""
import json, sqlite3, sys

keys = json.load(open(sys.argv[2]))
c = sqlite3.connect(sys.argv[1])
q = ",".join("?" * len(keys))
solvers = sorted({s for (s,) in c.execute(f"select distinct solver_id from find_records where problem_key in ({q})", keys)})
n = c.execute(f"update find_records set kernel_hash = 'stale:' || kernel_hash where problem_key in ({q})", keys).rowcount
c.commit()
print(f"# {len(keys)} problems, {n} records of {len(solvers)} solvers marked stale", file=sys.stderr)
print(" ".join(f"--solver {s}" for s in solvers))
