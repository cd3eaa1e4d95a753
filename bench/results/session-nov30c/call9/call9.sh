#!/usr/bin/env bash
# Session nov30c, call 9 (any sm_90), at the final code: call 3's bench_convs F runs again (FP16 PADDED_C, NON_RESNET),
# a second same-run figure for each with the session's last device seconds.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_DB=sqlite:////tmp/u9.sqlite CUPY_CACHE_DIR=/tmp/cupy9 MIOFIND_SYSTEM_DB=none
export MIOFIND_SPECIALIZE=sync
for run in "FP16 padded" "FP16 nonresnet"; do
  set -- $run
  left=$(( 115 - $(el) )); [ $left -lt 30 ] && { echo "skip $run: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs F --set $2 \
    --out $R/samerun > $R/samerun_F_$1_$2.txt 2>&1
  echo "$run rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_F_$1_$2.txt; save
done
echo "all $(el) s"
