#!/usr/bin/env bash
# Session nov30d, call 5 (any sm_90): split_probe.py (for PLAN_next.md item 2: whether a split's fixed cost per block
# hides where two or more blocks share an SM).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_SYSTEM_DB=none
timeout 200 python3 bench/results/session-nov30d/call5/split_probe.py > $R/split_probe.txt 2>&1
echo "probe rc=$? $(el) s"; cat $R/split_probe.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
