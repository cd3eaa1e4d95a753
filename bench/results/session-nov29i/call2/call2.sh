#!/usr/bin/env bash
# Session nov29i, call 2 (any sm_90; an H200), at the live-k-step kernel (call 1):
# 1. test_index_boundaries.py's padded cases (F, B and now W, n = 341 / 342; MIOFIND_BIG_TESTS=1), and the negative
#    control at n = 342 with 32-bit offsets (session-nov29h/call8/negative_control_pad.py): F and B must be caught;
#    W is expected blind (its kernel addresses only dw and the split's partial planes).
# 2. Same run (bench_convs.py --cudnn-harness: every own solver and every cuDNN plan in one find, MIOFIND_SPECIALIZE=sync,
#    empty user DB), FP16 NHWC N = 32 on PADDED_C: W without the padded configs (--no-padded), then W with them (the
#    narrowed default, padded_columns, measured for the first time), then F and B.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite
MIOFIND_BIG_TESTS=1 timeout 120 python3 -m pytest -m gpu tests/implicit_gemm_hopper/test_index_boundaries.py -k pad -v \
  -p no:cacheprovider -rfEs -n 2 --durations=10 > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries.log | head; tail -1 $R/boundaries.log
for key in Fpad Bpad Wpad; do
  timeout 80 python3 bench/results/session-nov29h/call8/negative_control_pad.py $key 342 >> $R/negative_control.jsonl \
    2>> $R/negative_control.err
  echo "$key rc=$?"
done
cut -c1-160 $R/negative_control.jsonl; save
export MIOFIND_SPECIALIZE=sync
for run in "before W --no-padded" "after W" "after FB"; do
  set -- $run
  left=$(( 580 - $(el) )); [ $left -lt 40 ] && { echo "skip $run: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs $2 --set padded ${3:-} \
    --out $R/$1_$2 > $R/$1_$2.txt 2>&1
  echo "$1 $2 rc=$? $(el) s"; grep -E "harness, geometric mean" $R/$1_$2.txt; save
done
