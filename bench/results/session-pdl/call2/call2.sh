#!/usr/bin/env bash
# Session pdl, call 2: test_pdl.py again (its queued-op test made its inputs on the legacy default stream and used
# them on a non-blocking one: a race of the test's own; the inputs now come from the same stream), then the shipped
# DB: every Hopper record re-measured under the new trust keys (add-solver-records), then ResNet-50 N=32 FP16 NHWC
# F/B/W re-tuned for the family (the old tuned configs' trust keys changed). The DB comes back gzipped after each step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c2; mkdir -p $R
save() { (cd $OUT && tar czf c2.tgz c2); }
savedb() { python3 -c "import sqlite3; c=sqlite3.connect('/tmp/db.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE'); c.execute('VACUUM')"; gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; save; }
timeout 70 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_pdl.py -p no:cacheprovider > $R/pdl_tests.log 2>&1
echo "pdl tests rc=$?"; tail -1 $R/pdl_tests.log; grep -E "^FAILED|^ERROR" $R/pdl_tests.log | head -5 | cut -c1-300; save
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
t0=$(date +%s)
timeout 300 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperFwd --solver ConvImplicitGemmHopperBwd \
  --solver ConvImplicitGemmHopperWrw --solver ConvImplicitGemmHopperFwdBiasActiv --seconds 270 --json $R/add_records.json \
  > $R/add_records.out 2> $R/add_records.log
echo "add-records rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $R/add_records.log; savedb
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 160 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --layout NHWC --direction F --direction B --direction W --tune-solver ConvImplicitGemmHopperFwd \
  --tune-solver ConvImplicitGemmHopperBwd --tune-solver ConvImplicitGemmHopperWrw --retune --max-configs 32 --patience 16 \
  --db sqlite:////tmp/db.sqlite --json-out $R/tune_fp16.json -q > $R/tune_fp16.log 2>&1
echo "tune fp16 rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $R/tune_fp16.log; savedb
