#!/usr/bin/env bash
# Session dec02a, call 6 (an H200): load_probe.py, 5 alternating rounds of serial / parallel processes: whether the
# ResNet-50 3x3 FP32 B find's two cuDNN first runs (14.6-16.0 ms of module loading, call 5) overlap from two threads.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd 
for i in 1 2 3 4 5 6; do
  if [ $((i % 2)) = 0 ]; then order="parallel serial"; else order="serial parallel"; fi
  for h in $order; do MIOFIND_DB=sqlite:////tmp/probe_${i}_$h.sqlite timeout 120 python3 bench/results/session-dec02a/load_probe.py $h >> $R/probe.jsonl 2>> $R/probe.err; done
  echo "round $i $(el) s"
done
cat $R/probe.jsonl; gzip -f $R/probe.err; save; echo "all $(el) s"
