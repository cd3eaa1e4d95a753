#!/usr/bin/env bash
# Session epi, call 4 (issue 19): the shipped DB's Hopper W records measured again with the find's new configs (the
# default and three modelled alternates, or the tuned config where the PerfDB has one): on a copy of
# finddb/sm_90-132.sqlite, the 416 ConvImplicitGemmHopperWrw find records deleted, then scripts/add-solver-records;
# then ResNet-50 N=32's W problems re-tuned for that solver (FP16, BF16) with a larger search than before.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id = 'ConvImplicitGemmHopperWrw'\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
MIOFIND_DB=sqlite:////tmp/mf-user.sqlite timeout 330 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperWrw \
  --seconds 300 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/add_records.log | cut -c1-600; save
left=$(( 570 - ($(date +%s) - T0) ))
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction W --tune-solver ConvImplicitGemmHopperWrw --retune \
  --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite --json-out $R/tune_W.json > $R/tune_W.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/tune_W.log | cut -c1-400; save
