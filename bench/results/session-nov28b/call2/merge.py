"""Session nov28b, call 2's shipped DB: the call's DB (every Hopper F and B record measured again: their kernel source
changed with the TF32 build; then ResNet-50's N=32 NHWC FP16/BF16 problems' records all measured again on the same host),
with the records that its re-measure cut (a candidate whose first runs took 3x the best is not stored, and a 'cut'
failure is recorded instead) restored from the shipped DB before the call and their 'cut' failures dropped, as session
nov27l's merge did; not Hopper F or B records, which the kernel change left untrusted. Rollback-journal mode, vacuumed.
python3 merge.py BEFORE CALL OUT"""
import shutil, sqlite3, sys

CHANGED = ("ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwd", "ConvImplicitGemmHopperFwdBiasActiv")
before, call, out = sys.argv[1:4]
shutil.copyfile(call, out)
c = sqlite3.connect(out)
c.execute("attach database ? as b", (before,))
cut = c.execute("select device, problem_key, solver_id from find_failures where stage = 'cut'").fetchall()
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
n = skipped = 0
for dev, key, sid in cut:
    if sid in CHANGED:
        skipped += 1
        continue
    have = c.execute("select count(*) from find_records where device=? and problem_key=? and solver_id=?",
                     (dev, key, sid)).fetchone()[0]
    if have:
        continue
    n += c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from b.find_records "
                   "where device=? and problem_key=? and solver_id=?", (dev, key, sid)).rowcount
gone = c.execute("delete from find_failures where stage = 'cut' and solver_id not in (?, ?, ?)", CHANGED).rowcount
c.commit()
print(f"{len(cut)} cut candidates: {n} records restored from the DB before, {skipped} of changed solvers not restored, "
      f"{gone} 'cut' failures dropped; {c.execute('select count(*) from find_records').fetchone()[0]} find records in all")
c.execute("detach database b")
c.execute("pragma journal_mode=DELETE")     # a shipped DB is a rollback-journal file
c.execute("vacuum")
c.close()
