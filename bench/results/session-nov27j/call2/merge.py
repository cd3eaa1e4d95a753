"""Session nov27j's shipped DB: the shipped DB before (fae1dfc's finddb/sm_90-132.sqlite) with call 2's re-measured
records of ResNet-50's 138 N=32 NHWC FP16/BF16 problems (every solver's but the naive ones, cuDNN's plans beside ours,
each GEMM solver's cuBLASLt algorithms as its configs, on one host) put in place of the same (problem, solver)
records. A find cuts a clearly losing candidate and stores no record of it, and call 2 did not measure the naive
solvers: those keep their records (session-nov27/call8/merge.py, with the 138 keys of session-cw/call6).
python3 merge.py BEFORE CALL2 OUT"""
import json, os, shutil, sqlite3, sys

before, call2, out = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
keys = json.load(open(os.path.join(here, "..", "..", "session-cw", "call6", "r50_keys.json")))
shutil.copyfile(before, out)
c = sqlite3.connect(out)
c.execute("attach database ? as m", (call2,))
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
q = ",".join("?" * len(keys)) + ") and kernel_hash not like 'stale:%' and (1"   # call 2's measured records only
new = c.execute(f"select count(*) from m.find_records where problem_key in ({q})", keys).fetchone()[0]
qk = ",".join("?" * len(keys))
gone = c.execute(f"delete from find_records where problem_key in ({qk}) and (device, problem_key, solver_id) in "
                 f"(select device, problem_key, solver_id from m.find_records where problem_key in ({q}))", keys + keys).rowcount
c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from m.find_records where problem_key in ({q})", keys)
c.commit()
left = c.execute(f"select count(*) from find_records where problem_key in ({qk})", keys).fetchone()[0]
stale = c.execute("select count(*) from find_records where kernel_hash like 'stale:%'").fetchone()[0]
print(f"{new} records of call 2 replaced {gone}; {left} records of the 138 problems; {stale} stale; "
      f"{c.execute('select count(*) from find_records').fetchone()[0]} records in all")
c.execute("detach database m")
c.execute("vacuum")
