#!/usr/bin/env bash
# Issue 19 (call 2): the persistent copy-engine forward (now the default where the copy engine serves x).
# 1. compute-sanitizer memcheck and racecheck (CuPy's pool off) on the Hopper forward's default configs of the sanitize
#    driver's problems, the tile-walking persistent one included (bench/sanitize_driver.py nhwc_tma_walk).
# 2. The shipped DB's Hopper F records re-measured at the new default (FP16/BF16 NHWC, every preset and batch: the
#    F find records deleted on a copy, then scripts/add-solver-records), then ResNet-50 N=32 F re-tuned in FP16 and
#    BF16 (--retune: the tuned configs start from the new default). The resulting DB comes back gzipped.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
( OUT=$OUT/sanitize SANITIZE_TIMEOUT=200 timeout 230 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every ) > $OUT/sanitize.txt 2>&1
echo "sanitize rc=$?"; tail -4 $OUT/sanitize.txt
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("/tmp/db.sqlite")
n = db.execute("delete from find_records where solver_id = 'ConvImplicitGemmHopperFwd'").rowcount
db.commit(); print(f"deleted {n} Hopper F find records")
PY
MIOFIND_DB=sqlite:////tmp/user-add.sqlite timeout 200 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperFwd \
  --seconds 170 --json $OUT/add_records.json > $OUT/db.log 2>&1
echo "add rc=$?"; tail -2 $OUT/db.log
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 200 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction F --tune-solver ConvImplicitGemmHopperFwd --retune \
  --max-configs 32 --patience 16 --db sqlite:////tmp/db.sqlite --json-out $OUT/tune_F.json >> $OUT/db.log 2>&1
echo "tune rc=$?"; tail -3 $OUT/db.log
python3 -c "import sqlite3; d=sqlite3.connect('/tmp/db.sqlite'); d.execute('pragma journal_mode=delete'); d.execute('vacuum')"
gzip -c /tmp/db.sqlite > $OUT/sm_90-132.sqlite.gz; ls -la $OUT
