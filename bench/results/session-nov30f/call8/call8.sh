#!/usr/bin/env bash
# Session nov30f, call 8 (any sm_90): lt_places.py: every place cuBLASLt's heuristic offers (up to 64) for ResNet-50's
# 1x1 stride-1 W and F layers, beside cuDNN's plans.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_DB=sqlite:////tmp/u8.sqlite CUPY_CACHE_DIR=/tmp/cupy8 MIOFIND_SYSTEM_DB=none
timeout 400 python3 bench/results/session-nov30f/call8/lt_places.py $R/lt_places.json > $R/lt_places.txt 2>&1
echo "probe rc=$? $(el) s"; grep -vE "^$" $R/lt_places.txt | tail -30
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
