#!/usr/bin/env bash
# Session nov30e, call 7 (any sm_90): the Hopper W split's reduce taken apart on six of call 1's configs (red_parts.py):
# the solution whole, its main kernel alone, its reduce alone (with and without the programmatic-dependent attribute),
# and main then reduce in plain stream order. FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_SYSTEM_DB=none
timeout 200 python3 bench/results/session-nov30e/call7/red_parts.py $R/red_parts.json > $R/red_parts.txt 2>&1
echo "probe rc=$? $(el) s"; tail -12 $R/red_parts.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
