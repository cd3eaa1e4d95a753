#!/usr/bin/env bash
# Session nov30h, call 9 (any sm_90): the tuned Hopper W config against the same tile's cluster splits on the layers
# that pay a reduce (cluster_vs_split.py): PLAN_next item 2, fewer partial planes.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy9 MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u9x.sqlite
timeout 150 python3 bench/results/session-nov30h/call9/cluster_vs_split.py > $R/cluster_vs_split.txt 2>&1
echo "rc=$? $(el) s"; cut -c1-120 $R/cluster_vs_split.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
