"""Session nov27's shipped DB: call 7's DB (ResNet-50's W problems re-tuned for the Hopper W solver; 11 tuned configs
changed, their records measured on call 7's host) with call 8's re-measured records of ResNet-50's 46 N=32 NHWC FP16/BF16
W problems (every solver's, cuDNN's plans among them, on one host) put in place of the same (problem, solver) records.
A find cuts a clearly losing candidate and stores no record of it, and call 8 did not measure the naive solver: those
keep call 7's records (session-cw/call6/merge.py, with the W keys).
python3 merge.py DB7 DB8 OUT"""
import json, os, shutil, sqlite3, sys

db4, db6, out = sys.argv[1:4]
keys = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "r50_w_keys.json")))
shutil.copyfile(db4, out)
c = sqlite3.connect(out)
c.execute("attach database ? as m", (db6,))
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
q = ",".join("?" * len(keys)) + ") and kernel_hash not like 'stale:%' and (1"   # call 8's measured records only
new = c.execute(f"select count(*) from m.find_records where problem_key in ({q})", keys).fetchone()[0]
qk = ",".join("?" * len(keys))
gone = c.execute(f"delete from find_records where problem_key in ({qk}) and (device, problem_key, solver_id) in "
                 f"(select device, problem_key, solver_id from m.find_records where problem_key in ({q}))", keys + keys).rowcount
c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from m.find_records where problem_key in ({q})", keys)
c.commit()
left = c.execute(f"select count(*) from find_records where problem_key in ({qk})", keys).fetchone()[0]
stale = c.execute("select count(*) from find_records where kernel_hash like 'stale:%'").fetchone()[0]
print(f"{new} records of call 8 replaced {gone}; {left} records of the 46 problems; {stale} stale; "
      f"{c.execute('select count(*) from find_records').fetchone()[0]} records in all")
c.execute("detach database m")
c.execute("vacuum")
