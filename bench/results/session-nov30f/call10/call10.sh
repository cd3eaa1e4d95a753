#!/usr/bin/env bash
# Session nov30f, call 10 (any sm_90): tm_prefetch.py: the Hopper W and F kernels with their tensor maps prefetched at
# kernel start (scratch copies), against as built, on ResNet-50's W and F layers at their find configs.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc10 MIOFIND_DB=sqlite:////tmp/u10.sqlite CUPY_CACHE_DIR=/tmp/cupy10 MIOFIND_SYSTEM_DB=none
timeout 380 python3 bench/results/session-nov30f/call10/tm_prefetch.py $R/tm_prefetch.json > $R/tm_prefetch.txt 2>&1
echo "probe rc=$? $(el) s"; grep -E "^(W|F|geomean)" $R/tm_prefetch.txt | tail -50
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
