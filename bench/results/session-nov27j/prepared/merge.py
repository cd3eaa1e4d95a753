"""Prepared (session nov27j, not run): the shipped DB with the next call's re-measured records of the problems in KEYS
(every solver's but the naive ones, on one host, the GEMMs at their tuned configs) put in place of the same (problem,
solver) records, and its GEMM PerfDB entries for those problems in place of any for the same problem and solver; cut
candidates and the naive solvers keep their records (as call7/merge.py, whose code this is with the keys an argument;
"call 7" below is that next call).
python3 merge.py BEFORE NEXT OUT KEYS"""
import json, os, shutil, sqlite3, sys

before, call7, out, keys_file = sys.argv[1:5]
keys = json.load(open(keys_file))
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
