#!/usr/bin/env bash
# Session nov28e, call 4 (issue 19, NCHW; bearing on issue 17): ResNet-50's AMP training step with the model left
# channels-first (autocast's default: NCHW FP16 problems), on one host. (1) build_db.py: every problem of the step
# found in benchmark mode on this GPU (all solvers) into a DB of its own; (2) a copy without the NCHW wrappers'
# records; (3) bench_models.py train32-ampnchw twice, each DB as the system DB beneath an empty user DB: cuDNN's
# benchmark mode against miofind without and with the wrappers.
set -uo pipefail
# (the first run of this call failed at build_db.py: its compile pool needs the main-module guard; results of that run
# are not kept)
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 300 python3 bench/results/session-nov28e/call4/build_db.py sqlite:////tmp/with.sqlite $R/build_db.json > $R/build_db.log 2>&1
echo "build rc=$? $(el) s"; grep -E "problems;|Error" $R/build_db.log | head -3; grep -c "NCHW-FP16" $R/build_db.log
cp /tmp/with.sqlite /tmp/without.sqlite
python3 - <<'PY'
import sqlite3
c = sqlite3.connect("/tmp/without.sqlite")
n = c.execute("delete from find_records where solver_id like 'ConvImplicitGemmHopper%Nchw'").rowcount
c.commit(); print(f"without: {n} records of the NCHW wrappers deleted")
for name in ("with", "without"):
    c = sqlite3.connect(f"/tmp/{name}.sqlite")
    rows = c.execute("select problem_key, solver_id, time_ms from find_records where verified=1").fetchall()
    best = {}
    for k, s, t in rows:
        if k not in best or t < best[k][1]: best[k] = (s, t)
    wins = {}
    for s, _ in best.values(): wins[s] = wins.get(s, 0) + 1
    print(name, len(best), "problems; fastest:", sorted(wins.items(), key=lambda x: -x[1]))
PY
cp /tmp/with.sqlite $R/with.sqlite; gzip $R/with.sqlite; save
for db in without with; do
  MIOFIND_SYSTEM_DB=/tmp/$db.sqlite MIOFIND_DB=sqlite:////tmp/u-$db.sqlite timeout $(( (580 - $(el)) / 2 + 20 )) \
    python3 bench/bench_models.py --models resnet50 --configs train32-ampnchw --skip-first --steps 0 --rounds 5 --iters 50 --out $R/models-$db \
    > $R/models-$db.log 2>&1
  echo "models $db rc=$? $(el) s"; tail -n 4 $R/models-$db.log; save
done
gzip -f $R/*.log; save
