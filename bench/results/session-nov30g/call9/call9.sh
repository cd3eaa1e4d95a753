#!/usr/bin/env bash
# Session nov30g, call 9 (any sm_90): call 8's wider guided tune, for F: the Hopper forward solvers (plain and
# copy-engine stores) and the 1x1 GEMM on ResNet-50's F (FP16 NHWC, N = 32), 400 configs, 8 s a solver and problem,
# patience 100, into an empty user DB, then the same-run F reading it.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() {
  python3 -c "import sqlite3; c=sqlite3.connect('/tmp/u9.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE')" 2>/dev/null
  gzip -c /tmp/u9.sqlite > $R/u9.sqlite.gz 2>/dev/null; tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy9 MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u9.sqlite
timeout 400 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction F \
  --tune-solver ConvImplicitGemmHopperFwd --tune-solver ConvImplicitGemmHopperFwdTmaStore --tune-solver GemmFwd1x1_0_1 \
  --strategy guided --max-configs 400 --max-seconds 8 --patience 100 --json-out $R/tune_f.json > $R/tune_f.txt 2>&1
echo "tune rc=$? $(el) s"; tail -1 $R/tune_f.txt; save
MIOFIND_SPECIALIZE=sync timeout 150 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F \
  --set resnet50 --out $R/samerun_f > $R/samerun_F_tuned.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F_tuned.txt
save; echo "all $(el) s"
