#!/usr/bin/env bash
# Session nov30g, call 3 (any sm_90): a longer guided tune of ResNet-50's W (FP16 NHWC, N = 32) than session nov30f's
# call 7 (48 configs, 6 s, patience 8): the Hopper W solver and the two GEMM W solvers, 96 configs, 14 s a solver and
# problem, patience 24, into an empty user DB, which comes back (u3.sqlite.gz) for call 4's same-run.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() {
  python3 -c "import sqlite3; c=sqlite3.connect('/tmp/u3.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE')" 2>/dev/null
  gzip -c /tmp/u3.sqlite > $R/u3.sqlite.gz 2>/dev/null; tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u3.sqlite
timeout 500 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --tune-solver GemmWrw1x1_stride1 --tune-solver GemmWrwUniversal --tune-solver ConvImplicitGemmHopperWrw \
  --strategy guided --max-configs 96 --max-seconds 14 --patience 24 --json-out $R/tune_long.json > $R/tune_long.txt 2>&1
echo "tune rc=$? $(el) s"; tail -2 $R/tune_long.txt; save; echo "all $(el) s"
