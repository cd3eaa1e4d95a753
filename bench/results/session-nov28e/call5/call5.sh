#!/usr/bin/env bash
# Session nov28e, call 5: call 4's A/B again on a fresh machine, in both orders (with, without, without, with: the
# rounds of one process drift by up to 25%), and batch-32 AMP NCHW inference beside training.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 300 python3 bench/results/session-nov28e/call4/build_db.py sqlite:////tmp/with.sqlite $R/build_db.json > $R/build_db.log 2>&1
echo "build rc=$? $(el) s"; grep -E "problems;|Error" $R/build_db.log | head -3
cp /tmp/with.sqlite /tmp/without.sqlite
python3 -c "
import sqlite3; c = sqlite3.connect('/tmp/without.sqlite')
print('without:', c.execute(\"delete from find_records where solver_id like 'ConvImplicitGemmHopper%Nchw'\").rowcount, 'deleted'); c.commit()"
i=0
for db in with without without with; do
  i=$((i + 1))
  MIOFIND_SYSTEM_DB=/tmp/$db.sqlite MIOFIND_DB=sqlite:////tmp/u-$db-$i.sqlite timeout 110 \
    python3 bench/bench_models.py --models resnet50 --configs train32-ampnchw,infer32-ampnchw --skip-first --steps 0 \
    --rounds 5 --iters 50 --out $R/models-$i-$db > $R/models-$i-$db.log 2>&1
  echo "models $i $db rc=$? $(el) s"; grep -o '"config": "[a-z0-9-]*"\|"cudnn_ms": [0-9.]*\|"miofind_ms": [0-9.]*\|"finds_run": [0-9]*' $R/models-$i-$db/bench_models.json | paste -sd' '; save
done
gzip -f $R/*.log; save
