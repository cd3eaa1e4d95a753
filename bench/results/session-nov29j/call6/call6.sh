#!/usr/bin/env bash
# Session nov29j, call 6 (any sm_90; an H200): the 32-deep K tiles' effect on what a find chooses, same run: bench_convs.py
# over PADDED_C, F and B, FP16 NHWC N = 32, no system DB (as calls 3 and 5), first without them (--no-row64: no TMA = 2
# config valid or tried), then with them (a second "after", beside call 5's).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite
export MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none
for run in "before --no-row64" "after"; do
  set -- $run
  left=$(( 560 - $(el) )); [ $left -lt 60 ] && { echo "skip $1: $left s left"; continue; }
  rm -f /tmp/u6.sqlite
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs FB --set padded ${2:-} \
    --out $R/$1_FB > $R/$1_FB.txt 2>&1
  echo "$1 rc=$? $(el) s"; grep -E "harness, geometric mean" $R/$1_FB.txt; save
done
