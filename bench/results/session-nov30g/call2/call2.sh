#!/usr/bin/env bash
# Session nov30g, call 2 (any sm_90): lt_identity.py in five processes (orders a, b, c, a, b): the cuBLASLt algorithm
# behind GemmWrw1x1's configs on ResNet-50's 256 -> 128 @56 1x1 W, and their times, process by process.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_SYSTEM_DB=none
i=0
for o in a b c a b; do
  i=$((i + 1))
  timeout 120 python3 bench/results/session-nov30g/call2/lt_identity.py $o $R/lt_$i$o.json > $R/lt_$i$o.txt 2>&1
  echo "process $i ($o) rc=$? $(el) s"; cat $R/lt_$i$o.txt | cut -c1-400
done
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
