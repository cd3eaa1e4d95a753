"""Marks every find record of ResNet-50's N=32 NHWC FP16/BF16 problems (r50_keys.json: the 138 keys that
bench/results/shipped-db-hopper-tuned/ratio.py reads) untrusted in a FindDB file (kernel_hash prefixed "stale:"), and
prints the add-solver-records arguments naming the solvers that had them, so that all of them are measured again in
one run on one host, cuDNN's plans beside our solvers, and replace the records (call 5 deleted them instead, and
add-solver-records, which walks the file's problems, then had none of them to measure):
python3 stale_r50.py DB"""
import json, os, sqlite3, sys

keys = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "r50_keys.json")))
c = sqlite3.connect(sys.argv[1])
q = ",".join("?" * len(keys))
solvers = sorted({s for (s,) in c.execute(f"select distinct solver_id from find_records where problem_key in ({q})", keys)})
n = c.execute(f"update find_records set kernel_hash = 'stale:' || kernel_hash where problem_key in ({q})", keys).rowcount
c.commit()
print(f"# {len(keys)} problems, {n} records of {len(solvers)} solvers marked stale", file=sys.stderr)
print(" ".join(f"--solver {s}" for s in solvers))
