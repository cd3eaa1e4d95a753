#!/usr/bin/env bash
# Issue 19 (session-wrw, call 4), at the reduce-scatter cluster split: on a copy of the shipped DB, the 416 Hopper W find
# records deleted and re-measured (scripts/add-solver-records), ResNet-50 N=32 W re-tuned in FP16 and BF16 with the new
# cluster configs in the space; then W kernel time with that DB's tuned configs (bench_kernel_time --tma).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
sqlite3 /tmp/db.sqlite "delete from find_records where solver_id='ConvImplicitGemmHopperWrw'" 2>/dev/null || \
  python3 -c "import sqlite3; c=sqlite3.connect('/tmp/db.sqlite'); c.execute(\"delete from find_records where solver_id='ConvImplicitGemmHopperWrw'\"); c.commit()"
t0=$(date +%s)
timeout 150 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperWrw > $OUT/add_records.json 2> $OUT/db.log
echo "add-records rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $OUT/db.log
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 300 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction W --tune-solver ConvImplicitGemmHopperWrw --retune --max-configs 48 \
  --patience 24 --db sqlite:////tmp/db.sqlite --json-out $OUT/tune_W.json -q >> $OUT/db.log 2>&1
echo "tune rc=$? $(( $(date +%s) - t0 )) s"
python3 -c "import sqlite3; c=sqlite3.connect('/tmp/db.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE'); c.execute('VACUUM')"
cp /tmp/db.sqlite finddb/sm_90-132.sqlite && gzip -c /tmp/db.sqlite > $OUT/db.sqlite.gz
timeout 130 python3 bench/bench_kernel_time.py --dirs W --dtypes FP16,BF16 --tma --iters 30 --deadline 115 \
  --json $OUT/kt_r50.json > $OUT/kt_r50.log 2>&1
echo "kt rc=$?"; grep -A3 "geomean best" $OUT/kt_r50.log
