#!/usr/bin/env bash
# Session nov29h, call 8 (any sm_90; an H200): the negative control of call 7's padded boundary cases: Fpad and Bpad at
# n = 342 rebuilt with 32-bit offsets, which the test must catch (exit 0 = caught).
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
export CUPY_CACHE_DIR=/tmp/cupy8 MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_DB=sqlite:////tmp/u8.sqlite
for key in Fpad Bpad; do
  timeout 100 python3 bench/results/session-nov29h/call8/negative_control_pad.py $key 342 >> $R/negative_control.jsonl \
    2>> $R/negative_control.err
  echo "$key rc=$?"
done
cat $R/negative_control.jsonl; tar czf $OUT/r.tgz -C /tmp r
