#!/usr/bin/env bash
# Session nov30c, call 5 (any sm_90): the multicast twins' persistent grid (mc_grid.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_SYSTEM_DB=none
timeout 200 python3 bench/results/session-nov30c/call5/mc_grid.py > $R/mc_grid.txt 2>&1
echo "mc_grid rc=$? $(el) s"; cat $R/mc_grid.txt | tail -60; save
