#!/usr/bin/env bash
# Issue 19 (call 3): the persistent copy-engine B walk tests (call 2's two failures were the test's own tile count:
# now every phase of n=40 has at least twice its grid's tiles), compute-sanitizer on the Hopper backward data's
# configs of the sanitize driver's problems (call 2's run stopped at the fused problem, which the driver now skips
# for B), then the shipped DB's Hopper B records re-measured at the new default (FP16/BF16 NHWC, every preset and
# batch: the B find records deleted on a copy, then scripts/add-solver-records), then ResNet-50 N=32 B re-tuned in
# FP16 and BF16 (--retune: the tuned configs start from the new default). The resulting DB comes back gzipped.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 100 python3 -m pytest -v -m gpu -p no:cacheprovider -n 4 tests/implicit_gemm_hopper/test_tma.py -k "bwd_tma_persistent" > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -2 $OUT/tests.log; grep -E " FAILED|^E  " $OUT/tests.log | head -20
( OUT=$OUT/sanitize SANITIZE_TIMEOUT=150 timeout 180 scripts/sanitize --solvers ConvImplicitGemmHopperBwd --every ) > $OUT/sanitize.txt 2>&1
echo "sanitize rc=$?"; tail -4 $OUT/sanitize.txt
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("/tmp/db.sqlite")
n = db.execute("delete from find_records where solver_id = 'ConvImplicitGemmHopperBwd'").rowcount
db.commit(); print(f"deleted {n} Hopper B find records")
PY
MIOFIND_DB=sqlite:////tmp/user-add.sqlite timeout 120 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperBwd \
  --seconds 100 --json $OUT/add_records.json > $OUT/db.log 2>&1
echo "add rc=$?"; tail -2 $OUT/db.log
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 200 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction B --tune-solver ConvImplicitGemmHopperBwd --retune \
  --max-configs 32 --patience 16 --db sqlite:////tmp/db.sqlite --json-out $OUT/tune_B.json >> $OUT/db.log 2>&1
echo "tune rc=$?"; tail -3 $OUT/db.log
python3 -c "import sqlite3; d=sqlite3.connect('/tmp/db.sqlite'); d.execute('pragma journal_mode=delete'); d.execute('vacuum')"
gzip -c /tmp/db.sqlite > $OUT/sm_90-132.sqlite.gz; ls -la $OUT
