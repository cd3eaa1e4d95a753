#!/usr/bin/env bash
# Session nov30e, call 1 (any sm_90), PLAN_next.md item 4: the Hopper W split's main kernel alone, its whole solution,
# a scratch split summed in L2 (w_l2red.py), cuBLASLt's GEMM and cuDNN's plans on ResNet-50's W layers, FP16 NHWC,
# N = 32, two interleaved passes.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_SYSTEM_DB=none
timeout 480 python3 bench/results/session-nov30e/call1/w_l2red.py $R/w_l2red.json > $R/w_l2red.txt 2>&1
echo "probe rc=$? $(el) s"; grep -E "^(precompiled|geomean|  )" $R/w_l2red.txt | grep -v "^  *\(orig\|main\|l2red\) " | tail -30
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
