"""Session nov27l, call 2's shipped DB: call 2's DB (r/db.sqlite: every Hopper W record measured again, ResNet-50's
N=32 NHWC FP16/BF16 problems tuned for the three-warpgroup tiles and all their records measured again on one host), with
the records that its re-measure cut (a candidate whose first runs took 3x the best is not stored, and a 'cut' failure is
recorded instead) restored from the shipped DB before the call and their 'cut' failures dropped, as session nov27j's
merge kept them (call7/merge.py). None of them is a Hopper W record (whose kernel changed); --any-solver (a later call
with no kernel change: every record of the DB before is trusted) restores those too.
python3 merge.py BEFORE CALL2 OUT [--any-solver]"""
import shutil, sqlite3, sys

before, call2, out = sys.argv[1:4]
any_solver = "--any-solver" in sys.argv[4:]
shutil.copyfile(call2, out)
c = sqlite3.connect(out)
c.execute("attach database ? as b", (before,))
cut = c.execute("select device, problem_key, solver_id from find_failures where stage = 'cut'").fetchall()
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
n = 0
for dev, key, sid in cut:
    assert any_solver or sid != "ConvImplicitGemmHopperWrw", (key, sid)
    have = c.execute("select count(*) from find_records where device=? and problem_key=? and solver_id=?",
                     (dev, key, sid)).fetchone()[0]
    if have:
        continue
    n += c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from b.find_records "
                   "where device=? and problem_key=? and solver_id=?", (dev, key, sid)).rowcount
gone = c.execute("delete from find_failures where stage = 'cut'").rowcount
c.commit()
print(f"{len(cut)} cut candidates: {n} records restored from the DB before, {gone} 'cut' failures dropped; "
      f"{c.execute('select count(*) from find_records').fetchone()[0]} find records in all")
c.execute("detach database b")
c.execute("pragma journal_mode=DELETE")     # a shipped DB is a rollback-journal file (the call's DB came back in WAL mode)
c.execute("vacuum")
