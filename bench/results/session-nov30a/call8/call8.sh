#!/usr/bin/env bash
# Session nov30a, call 8 (any sm_90; an H200): epilogue_probe.py, each variant in its own process and kernel cache.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_DB=sqlite:////tmp/u8.sqlite
for round in 1 2; do
  for v in orig noglobal nostore; do
    MIOFIND_KERNEL_CACHE=/tmp/kc8-$v CUPY_CACHE_DIR=/tmp/cupy8-$v timeout 100 \
      python3 bench/results/session-nov30a/call8/epilogue_probe.py $v >> $R/probe.jsonl 2>> $R/probe.err
    echo "$v rc=$? $(el) s"
  done
done
cat $R/probe.jsonl; tail -3 $R/probe.err; save; echo "all $(el) s"
