#!/usr/bin/env bash
# Session nov30g, call 4 (any sm_90): the same-run W (bench_convs.py --cudnn-harness, ResNet-50 FP16 NHWC N = 32) reading
# call 3's tuned user DB, at this code: a find now measures the default beside each tuned config of an own solver.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
gunzip -c bench/results/session-nov30g/call3/u3.sqlite.gz > /tmp/u4.sqlite
export CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u4.sqlite
MIOFIND_SPECIALIZE=sync timeout 300 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_tuned > $R/samerun_W_tuned.txt 2>&1
echo "samerun (tuned) rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W_tuned.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
