#!/usr/bin/env bash
# Session nov28e, call 8: the model-level A/B made clean by a setting. One DB built in a fresh folder (call4/build_db.py,
# every solver measured on this GPU); both sides read it; the "without" side runs with MIOFIND_HOPPER_NCHW=0, so
# neither its DB answers nor its in-process finds (problems whose DB answer counts incomplete) can take a wrapper.
# Order: with, without, without, with, as far as the device time left allows. As run: RUN_LIMIT=60 (s a model run),
# STOP_AT=170 (s, no run started after), CONFIG=train32-ampnchw (train32-tf32: PyTorch's default FP32, on a DB of
# those problems); prepared/call_ab.sh runs it with longer limits.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
W=$(mktemp -d /tmp/c8.XXXX)
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
CONFIG=${CONFIG:-train32-ampnchw} RUN_LIMIT=${RUN_LIMIT:-60} STOP_AT=${STOP_AT:-170}
timeout 150 python3 bench/results/session-nov28e/call4/build_db.py sqlite:///$W/db.sqlite $R/build_db.json \
  $([ $CONFIG = train32-tf32 ] && echo tf32) > $R/build_db.log 2>&1
echo "build rc=$? $(el) s"; grep -E "problems;|Error" $R/build_db.log | head -3; save
i=0
for side in with without without with; do
  i=$((i + 1))
  [ $(el) -gt $STOP_AT ] && { echo "stopped before run $i: device time"; break; }
  on=$([ $side = with ] && echo 1 || echo 0)
  MIOFIND_HOPPER_NCHW=$on MIOFIND_SYSTEM_DB=$W/db.sqlite MIOFIND_DB=sqlite:///$W/u-$i.sqlite timeout $RUN_LIMIT \
    python3 bench/bench_models.py --models resnet50 --configs $CONFIG --skip-first --steps 0 \
    --rounds 5 --iters 50 --out $R/models-$i-$side > $R/models-$i-$side.log 2>&1
  echo "models $i $side rc=$? $(el) s"; grep -o '"cudnn_ms": [0-9.]*\|"miofind_ms": [0-9.]*\|"finds_run": [0-9]*\|"db_hits": [0-9]*' $R/models-$i-$side/bench_models.json | paste -sd' '; save
done
gzip -f $R/*.log; save
