"""Session nov27j, call 5's shipped DB: the shipped DB before it (call 2's records merged, re-keyed: call2/merge.py,
call2/rekey.py) with call 5's re-measured records of ResNet-50's 46 N=32 NHWC FP16/BF16 W problems (every solver's
but the naive ones, on one host, the GEMM W solvers at their tuned configs) put in place of the same (problem, solver)
records, and call 5's PerfDB entries of the two GEMM W solvers (its tune) in place of any for the same problem and
solver. Cut candidates and the naive solvers keep their records (as call2/merge.py).
python3 merge.py BEFORE CALL5 OUT"""
import json, os, shutil, sqlite3, sys

before, call5, out = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
keys = json.load(open(os.path.join(here, "..", "..", "session-nov27", "call8", "r50_w_keys.json")))
shutil.copyfile(before, out)
c = sqlite3.connect(out)
c.execute("attach database ? as m", (call5,))
qk = ",".join("?" * len(keys))
q = qk + ") and kernel_hash not like 'stale:%' and (1"      # call 5's measured records only
for table, extra in (("find_records", ""), ("perf_records", " and solver_id in ('GemmWrw1x1_stride1', 'GemmWrwUniversal')")):
    cols = [r[1] for r in c.execute(f"pragma table_info({table})") if r[1] != "id"]
    new = c.execute(f"select count(*) from m.{table} where problem_key in ({q}){extra}", keys).fetchone()[0]
    gone = c.execute(f"delete from {table} where problem_key in ({qk}) and (device, problem_key, solver_id) in "
                     f"(select device, problem_key, solver_id from m.{table} where problem_key in ({q}){extra})",
                     keys + keys).rowcount
    c.execute(f"insert into {table} ({','.join(cols)}) select {','.join(cols)} from m.{table} "
              f"where problem_key in ({q}){extra}", keys)
    print(f"{table}: {new} of call 5 replaced {gone}")
c.commit()
stale = c.execute("select count(*) from find_records where kernel_hash like 'stale:%'").fetchone()[0]
print(f"{stale} stale; {c.execute('select count(*) from find_records').fetchone()[0]} find records in all")
c.execute("detach database m")
c.execute("vacuum")
