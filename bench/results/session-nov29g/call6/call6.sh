#!/usr/bin/env bash
# Session nov29g call 6: red_ab.py (the Hopper W split's reduce at RED_GROUPS 4 / 8 / 16 / 32), ResNet-50 N=32 FP16 W.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u6.sqlite
timeout 400 python3 bench/results/session-nov29g/call6/red_ab.py bench/results/session-nov29g/call4/tune_guided.json \
  $R/red_ab.json > $R/red_ab.txt 2>&1
echo "red_ab rc=$? $(el) s"; tail -5 $R/red_ab.txt; save
