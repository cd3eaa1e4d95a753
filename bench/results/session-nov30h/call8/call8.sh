#!/usr/bin/env bash
# Session nov30h, call 8 (any sm_90): the split's reduce share of the Hopper W solution in a pipeline on the narrow 3x3
# and the 56 x 56 1x1 W layers (reduce_share.py): PLAN_next item 2's next measurement.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy8 MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u8x.sqlite
timeout 150 python3 bench/results/session-nov30h/call8/reduce_share.py > $R/reduce_share.txt 2>&1
echo "rc=$? $(el) s"; cat $R/reduce_share.txt | cut -c1-300
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
