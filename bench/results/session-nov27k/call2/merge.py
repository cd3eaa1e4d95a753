"""Session nov27k, call 2's shipped DB: call 1's (BEFORE) with call 2's re-measured find records of the 18 problems of
keys.json (CALL2, every record measured on one host) in place of the same (problem, solver) records. A candidate the
re-measure cut keeps its record from BEFORE (as session-nov27j/call7/merge.py), unless that record is one of the
unstable ones (q80 > 1.2 x q20, unstable.py): it is dropped, as a cut candidate's record is never stored.
python3 merge.py BEFORE CALL2 OUT"""
import json, os, shutil, sqlite3, sys

before, call2, out = sys.argv[1:4]
keys = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "keys.json")))
shutil.copyfile(before, out)
c = sqlite3.connect(out)
c.execute("attach database ? as m", (call2,))
q = ",".join("?" * len(keys))
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
gone = c.execute(f"delete from find_records where problem_key in ({q}) and (device, problem_key, solver_id) in "
                 f"(select device, problem_key, solver_id from m.find_records where problem_key in ({q}))",
                 keys + keys).rowcount
new = c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from m.find_records "
                f"where problem_key in ({q})", keys).rowcount
dropped = c.execute(f"delete from find_records where problem_key in ({q}) and verified = 1 and time_q20_ms > 0 "
                    f"and time_q80_ms > 1.2 * time_q20_ms and (device, problem_key, solver_id) not in "
                    f"(select device, problem_key, solver_id from m.find_records)", keys).rowcount
c.commit()
print(f"find_records: {new} of call 2 replaced {gone}; {dropped} unstable records of cut candidates dropped; "
      f"{c.execute('select count(*) from find_records').fetchone()[0]} in all")
