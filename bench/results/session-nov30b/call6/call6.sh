#!/usr/bin/env bash
# Session nov30b, call 6 (any sm_90): call 3's ResNet-50 FP16 forward side-by-side twice more, and call 4's backward
# data once more, for the spread of the figures (bench_convs --cudnn-harness, no system DB, each run its own user DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none
for run in "F 1" "F 2" "B 1"; do
  set -- $run
  left=$(( 280 - $(el) )); [ $left -lt 50 ] && { echo "skip $run: $left s left"; continue; }
  MIOFIND_DB=sqlite:////tmp/u6_$1$2.sqlite timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC \
    --cudnn-harness --dirs $1 --set resnet50 --out $R/samerun_$1$2 > $R/samerun_$1_FP16_resnet50_$2.txt 2>&1
  echo "$run rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_$1_FP16_resnet50_$2.txt; save
done
echo "all $(el) s"
