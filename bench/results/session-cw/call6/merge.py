"""The shipped DB of session cw: call 4's DB (every record trusted; the Hopper ones measured in calls 3-4) with call 6's
re-measured records of ResNet-50's 138 N=32 NHWC FP16/BF16 problems put in place of the same (problem, solver)
records. A find cuts a candidate that is clearly losing and stores no record of it, so call 6 stored 488 of the 667
(naive, FFT, Winograd and some slower own solvers; one cuDNN record, of a BF16 F problem): those keep call 4's.
python3 merge.py DB4 DB6 OUT"""
import json, os, shutil, sqlite3, sys

db4, db6, out = sys.argv[1:4]
keys = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "r50_keys.json")))
shutil.copyfile(db4, out)
c = sqlite3.connect(out)
c.execute("attach database ? as m", (db6,))
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
q = ",".join("?" * len(keys))
new = c.execute(f"select count(*) from m.find_records where problem_key in ({q})", keys).fetchone()[0]
gone = c.execute(f"delete from find_records where problem_key in ({q}) and (device, problem_key, solver_id) in "
                 f"(select device, problem_key, solver_id from m.find_records where problem_key in ({q}))", keys + keys).rowcount
c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from m.find_records where problem_key in ({q})", keys)
c.commit()
left = c.execute(f"select count(*) from find_records where problem_key in ({q})", keys).fetchone()[0]
stale = c.execute("select count(*) from find_records where kernel_hash like 'stale:%'").fetchone()[0]
print(f"{new} records of call 6 replaced {gone}; {left} records of the 138 problems; {stale} stale; "
      f"{c.execute('select count(*) from find_records').fetchone()[0]} records in all")
c.execute("detach database m")
c.execute("vacuum")
