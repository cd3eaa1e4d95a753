#!/usr/bin/env bash
# Session nov30f, call 11 (any sm_90): the same-run F and B of ResNet-50 (FP16 NHWC, N = 32) at the session's final
# code, every own solver and every cuDNN plan in one find per problem (empty user DB, no system DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u11.sqlite
MIOFIND_SPECIALIZE=sync timeout 240 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs FB \
  --set resnet50 --out $R/samerun > $R/samerun_FB.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_FB.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
