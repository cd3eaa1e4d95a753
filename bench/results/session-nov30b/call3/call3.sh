#!/usr/bin/env bash
# Session nov30b, call 3 (any sm_90): bench_convs.py's same-run side-by-side (own best against cuDNN's best plan in our
# harness) of the forward on PADDED_C, ResNet-50 and NON_RESNET, FP16 NHWC, N = 32, with the resident-B twins in the
# Hopper forward's find; no system DB, specialised builds measured synchronously; then ResNet-50 BF16 F if time is left.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_SPECIALIZE=sync
export MIOFIND_SYSTEM_DB=none
for run in "FP16 padded" "FP16 resnet50" "FP16 nonresnet" "BF16 resnet50"; do
  set -- $run
  left=$(( 575 - $(el) )); [ $left -lt 60 ] && { echo "skip $run: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs F --set $2 \
    --out $R/samerun > $R/samerun_F_$1_$2.txt 2>&1
  echo "$run rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_F_$1_$2.txt; save
done
echo "all $(el) s"
