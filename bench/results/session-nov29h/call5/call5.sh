#!/usr/bin/env bash
# Session nov29h, call 5 (any sm_90; an H200): the same run on tests/shapes.py's PADDED_C with and without the padded
# copy-engine K tiles (bench_convs.py --no-padded: the Hopper solvers patched as before them), alternating, F and B,
# FP16 NHWC N = 32, every own solver and every cuDNN plan in one benchmark find a problem, MIOFIND_SPECIALIZE=sync.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_SPECIALIZE=sync
for arm in before after before after; do
  left=$(( 570 - $(el) )); [ $left -lt 40 ] && { echo "skip $arm: $left s left"; continue; }
  flag=""; [ $arm = before ] && flag="--no-padded"
  i=$(ls -d $R/$arm* 2>/dev/null | wc -l)
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs FB --set padded $flag \
    --out $R/${arm}$i > $R/${arm}$i.txt 2>&1
  echo "$arm$i rc=$? $(el) s"; grep -E "harness, geometric mean" $R/${arm}$i.txt; save
done
