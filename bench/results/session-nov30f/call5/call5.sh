#!/usr/bin/env bash
# Session nov30f, call 5 (any sm_90): w_ksplit.py: two consumer warpgroups on alternate j tiles of one tile (a scratch
# copy of the W kernel), against one, on four 1x1 stride-1 layers; copies alone and wgmma alone.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_SYSTEM_DB=none
timeout 300 python3 bench/results/session-nov30f/call5/w_ksplit.py $R/w_ksplit.json > $R/w_ksplit.txt 2>&1
echo "probe rc=$? $(el) s"; grep -vE "^$" $R/w_ksplit.txt | tail -30
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
