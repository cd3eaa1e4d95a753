"""Session nov27j, call 7's shipped DB (the final one): the shipped DB before it (call5/merge.py's) with call 7's
re-measured records of ResNet-50's 138 N=32 NHWC FP16/BF16 problems (every solver's but the naive ones, on one host,
the GEMM solvers at their tuned configs: call 7's F/B tune, call 5's W tune) put in place of the same (problem, solver)
records, and the six GEMM solvers' PerfDB entries of call 7's DB for those problems in place of any for the same
problem and solver. Cut candidates and the naive solvers keep their records (as call2/merge.py). KEYS (a JSON list)
replaces the 138 keys (prepared/call_next.sh's other groups).
python3 merge.py BEFORE CALL7 OUT [KEYS]"""
import json, os, shutil, sqlite3, sys

before, call7, out = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
keys = json.load(open(sys.argv[4] if len(sys.argv) > 4 else
                      os.path.join(here, "..", "..", "session-cw", "call6", "r50_keys.json")))
shutil.copyfile(before, out)
c = sqlite3.connect(out)
c.execute("attach database ? as m", (call7,))
qk = ",".join("?" * len(keys))
q = qk + ") and kernel_hash not like 'stale:%' and (1"      # call 7's measured records only
for table, extra in (("find_records", ""), ("perf_records", " and solver_id like 'Gemm%'")):
    cols = [r[1] for r in c.execute(f"pragma table_info({table})") if r[1] != "id"]
    new = c.execute(f"select count(*) from m.{table} where problem_key in ({q}){extra}", keys).fetchone()[0]
    gone = c.execute(f"delete from {table} where problem_key in ({qk}) and (device, problem_key, solver_id) in "
                     f"(select device, problem_key, solver_id from m.{table} where problem_key in ({q}){extra})",
                     keys + keys).rowcount
    c.execute(f"insert into {table} ({','.join(cols)}) select {','.join(cols)} from m.{table} "
              f"where problem_key in ({q}){extra}", keys)
    print(f"{table}: {new} of call 7 replaced {gone}")
c.commit()
stale = c.execute("select count(*) from find_records where kernel_hash like 'stale:%'").fetchone()[0]
print(f"{stale} stale; {c.execute('select count(*) from find_records').fetchone()[0]} find records in all")
c.execute("detach database m")
c.execute("vacuum")
