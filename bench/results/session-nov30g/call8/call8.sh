#!/usr/bin/env bash
# Session nov30g, call 8 (any sm_90): call 7 found a better Hopper W config on 512 -> 1024 @28 1x1/2 (split 1 over a
# cluster of 3: 0.891 of cuDNN isolated) than call 3's guided tune kept (split 4: 1.115), which stopped after 24
# configs without a gain. The Hopper W solver re-tuned on ResNet-50's W (FP16 NHWC, N = 32) from call 3's user DB,
# guided, 400 configs, 15 s a problem, patience 100 (a re-tune keeps the stored config unless it beats it), then the
# same-run W reading that DB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() {
  python3 -c "import sqlite3; c=sqlite3.connect('/tmp/u8.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE')" 2>/dev/null
  gzip -c /tmp/u8.sqlite > $R/u8.sqlite.gz 2>/dev/null; tar czf $OUT/r.tgz -C /tmp r; }
gunzip -c bench/results/session-nov30g/call3/u3.sqlite.gz > /tmp/u8.sqlite
export CUPY_CACHE_DIR=/tmp/cupy8 MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u8.sqlite
timeout 380 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W --retune \
  --tune-solver ConvImplicitGemmHopperWrw --strategy guided --max-configs 400 --max-seconds 15 --patience 100 \
  --json-out $R/tune_wide.json > $R/tune_wide.txt 2>&1
echo "tune rc=$? $(el) s"; tail -1 $R/tune_wide.txt; save
MIOFIND_SPECIALIZE=sync timeout 150 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_wide > $R/samerun_W_wide.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W_wide.txt
save; echo "all $(el) s"
