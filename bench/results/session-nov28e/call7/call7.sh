#!/usr/bin/env bash
# Session nov28e, call 7: the A/B of calls 4-5 made clean. Call 4's second run reused the user DBs its failed first run
# had filled on the same warm machine (in-process finds of every solver, the wrappers included), so its "without" side
# could pick the wrappers; call 5's processes each ran 7 finds of problems build_db.py had not listed. Here: (1) the DB
# built in a fresh folder; (2) one short probe run on it, whose in-process finds are the problems build_db.py missed:
# listed, and their records (this GPU's, every solver) merged into the DB; (3) the copy without the wrappers' records;
# (4) the A/B in the order with, without, without, with, each on a new user DB, where finds_run must be 0.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
W=$(mktemp -d /tmp/c7.XXXX)
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 300 python3 bench/results/session-nov28e/call4/build_db.py sqlite:///$W/with.sqlite $R/build_db.json > $R/build_db.log 2>&1
echo "build rc=$? $(el) s"; grep -E "problems;|Error" $R/build_db.log | head -3
MIOFIND_SYSTEM_DB=$W/with.sqlite MIOFIND_DB=sqlite:///$W/probe.sqlite timeout 120 python3 bench/bench_models.py --models resnet50 \
  --configs train32-ampnchw --skip-first --steps 0 --rounds 1 --iters 5 --out $R/probe > $R/probe.log 2>&1
echo "probe rc=$? $(el) s"
python3 - "$W" <<'PY' | tee $R/merge.txt
import sqlite3, sys
w = sys.argv[1]
c = sqlite3.connect(f"{w}/with.sqlite")
cols = [r[1] for r in c.execute("pragma table_info(find_records)") if r[1] != "id"]
c.execute(f"attach '{w}/probe.sqlite' as p")
keys = [r[0] for r in c.execute("select distinct problem_key from p.find_records order by 1")]
print(f"{len(keys)} problem(s) the probe found in-process (build_db.py did not list them):")
for k in keys:
    print("  ", k)
n = c.execute(f"insert into find_records ({','.join(cols)}) select {','.join(cols)} from p.find_records").rowcount
c.commit(); c.execute("detach p"); print(f"merged {n} records")
c.close()
PY
cp $W/with.sqlite $W/without.sqlite
python3 -c "
import sqlite3; c = sqlite3.connect('$W/without.sqlite')
print('without:', c.execute(\"delete from find_records where solver_id like 'ConvImplicitGemmHopper%Nchw'\").rowcount, 'wrapper records deleted'); c.commit()" | tee -a $R/merge.txt
i=0
for db in with without without with; do
  i=$((i + 1))
  MIOFIND_SYSTEM_DB=$W/$db.sqlite MIOFIND_DB=sqlite:///$W/u-$i.sqlite timeout 100 \
    python3 bench/bench_models.py --models resnet50 --configs train32-ampnchw --skip-first --steps 0 \
    --rounds 5 --iters 50 --out $R/models-$i-$db > $R/models-$i-$db.log 2>&1
  echo "models $i $db rc=$? $(el) s"; grep -o '"cudnn_ms": [0-9.]*\|"miofind_ms": [0-9.]*\|"finds_run": [0-9]*\|"db_hits": [0-9]*' $R/models-$i-$db/bench_models.json | paste -sd' '; save
done
gzip -c $W/with.sqlite > $R/with.sqlite.gz
gzip -f $R/*.log; save
