#!/usr/bin/env bash
# Session nov30g, call 1 (any sm_90): red_probe.py: GemmWrw1x1's split configs, in-place (RED 1) against in the workspace
# (RED 2), each built afresh in 4 rounds, on three ResNet-50 1x1 W layers; and CuPy's copy, fill and sum of 64 MB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_SYSTEM_DB=none
timeout 300 python3 bench/results/session-nov30g/call1/red_probe.py $R/red_probe.json > $R/red_probe.txt 2>&1
echo "probe rc=$? $(el) s"; cat $R/red_probe.txt | tail -40
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
