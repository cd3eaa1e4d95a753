#!/usr/bin/env bash
# Session nov30e, call 9 (any sm_90): the Hopper W kernel with deeper pipelines (STAGES up to 12, admitted by the probe
# only) on ResNet-50's 1x1 stride-1 W layers at 28 x 28, 14 x 14 and 7 x 7, beside cuBLASLt's default and cuDNN's plans
# (w_stages.py). FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_DB=sqlite:////tmp/u9.sqlite CUPY_CACHE_DIR=/tmp/cupy9 MIOFIND_SYSTEM_DB=none
timeout 300 python3 bench/results/session-nov30e/call9/w_stages.py $R/w_stages.json > $R/w_stages.txt 2>&1
echo "probe rc=$? $(el) s"; grep -E "^(r50|precompiled|geomean)" $R/w_stages.txt
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
