#!/usr/bin/env bash
# Session nov30f, call 4 (any sm_90): w_bounds_mc.py: the W kernel's copies alone and wgmma alone, unpaired and in
# multicast pairs (the kernel of commit 7f707d0b in a scratch copy), on three 1x1 stride-1 layers.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_SYSTEM_DB=none
timeout 300 python3 bench/results/session-nov30f/call4/w_bounds_mc.py $R/w_bounds_mc.json > $R/w_bounds_mc.txt 2>&1
echo "probe rc=$? $(el) s"; grep -vE "^$" $R/w_bounds_mc.txt | tail -30
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
