#!/usr/bin/env bash
# Session nov28g, call 5 (the device time's last minutes): lt_probe.py in fresh processes, set-up first and FP16 first.
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
for i in 1 2; do
  timeout 60 python3 bench/results/session-nov28g/call5_lt_probe/lt_probe.py 2>&1 | tee -a $R/probe.txt
  timeout 60 python3 bench/results/session-nov28g/call5_lt_probe/lt_probe.py fp16-first 2>&1 | tee -a $R/probe.txt
done
cp $R/probe.txt $OUT/
