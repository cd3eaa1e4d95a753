#!/usr/bin/env bash
# Session pdl, call 3: on call 2's DB (finddb/ in this tree: every Hopper record re-measured, ResNet-50 FP16 re-tuned),
# ResNet-50 N=32 BF16 NHWC F/B/W re-tuned; compute-sanitizer memcheck on dependent launches (backward data's four
# unsplit stride phases, a split backward data, a split W); then kernel time of ResNet-50 FP16 F/B/W with the re-tuned
# configs, dependent launches against plain ones, beside cuDNN's best plan.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c3; mkdir -p $R
save() { (cd $OUT && tar czf c3.tgz c3); }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
savedb() { python3 -c "import sqlite3; c=sqlite3.connect('/tmp/db.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE'); c.execute('VACUUM')"; gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; save; }
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 170 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype bf16 --layout NHWC --direction F --direction B --direction W --tune-solver ConvImplicitGemmHopperFwd \
  --tune-solver ConvImplicitGemmHopperBwd --tune-solver ConvImplicitGemmHopperWrw --retune --max-configs 32 --patience 16 \
  --db sqlite:////tmp/db.sqlite --json-out $R/tune_bf16.json -q > $R/tune_bf16.log 2>&1
echo "tune bf16 rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $R/tune_bf16.log; savedb
for c in 'B 64 256 14 3 2 2 {"BM":128,"BN":64,"WGS":2,"STAGES":4,"PERSIST":0,"SPLITK":1,"WSPEC":1,"TMA":1}' \
         'B 64 256 14 3 2 2 {"BM":64,"BN":64,"WGS":1,"STAGES":3,"PERSIST":0,"WSPEC":1,"TMA":1,"SPLITK":2}' \
         'W 64 64 28 1 1 4'; do
  set -- $c
  echo "== $c" >> $R/sanitize.txt
  timeout 60 compute-sanitizer --tool memcheck python3 bench/hopper_wrw_profile.py "$@" >> $R/sanitize.txt 2>&1
  echo "sanitize rc=$? ($1 $7)"
done
grep -E "ERROR SUMMARY|done" $R/sanitize.txt; save
timeout 230 python3 bench/bench_kernel_time.py --dirs B,W,F --dtypes FP16 --pdl-ab --iters 30 --deadline 220 \
  --json $R/kt_r50.json > $R/kt_r50.log 2>&1; echo "kt r50 rc=$?"; sed -n '/^geomean/,$p' $R/kt_r50.log; save
