#!/usr/bin/env bash
# Session nov29h, call 4 (any sm_90; an H200): issue 19's same run at the padded K tiles' code, the shipped DB re-keyed
# (its tuned configs trusted again): bench/bench_convs.py --cudnn-harness (every own solver and every cuDNN plan in one
# benchmark find a problem, MIOFIND_SPECIALIZE=sync, empty user DB), FP16 NHWC N = 32, F and B, on tests/shapes.py's
# PADDED_C, NON_RESNET and ResNet-50's layers.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_SPECIALIZE=sync
for set in padded nonresnet resnet50; do
  left=$(( 570 - $(el) )); [ $left -lt 40 ] && { echo "skip $set: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs FB --set $set \
    --out $R/samerun > $R/samerun_FB_FP16_$set.txt 2>&1
  echo "$set rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_FB_FP16_$set.txt; save
done
