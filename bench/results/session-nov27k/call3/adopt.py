"""Session nov27k, call 3's shipped DB: call 3's DB (call 2's merge with the 7 dropped records measured again alone)
less the naive forward record it also measured for 256-56-56-3x3 ... -F_g64, a ResNeXt problem of the models found
without the naive solvers (session-nov27b): the shipped DB keeps naive records for the six presets' problems only.
python3 adopt.py CALL3_DB OUT"""
import shutil, sqlite3, sys

shutil.copyfile(sys.argv[1], sys.argv[2])
c = sqlite3.connect(sys.argv[2])
n = c.execute("delete from find_records where problem_key = '256-56-56-3x3-256-56-56-1-1x1-1x1-1x1-0-NCHW-FP16-F_g64' "
              "and solver_id = 'ConvDirectNaiveConvFwd'").rowcount
c.commit()
c.execute("VACUUM")
print(f"{n} record deleted; {c.execute('select count(*) from find_records').fetchone()[0]} find records")
