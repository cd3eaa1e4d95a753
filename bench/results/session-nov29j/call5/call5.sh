#!/usr/bin/env bash
# Session nov29j, call 5 (any sm_90; an H200):
# 1. test_index_boundaries.py's 32-deep padded cases (Fpad, Bpad at n = 341 / 342 with TMA = 2; MIOFIND_BIG_TESTS=1) and
#    their negative control at n = 342 with 32-bit offsets (negative_control_row64.py): both must be caught.
# 2. bench_convs.py over PADDED_C, F and B, FP16 NHWC N = 32, no system DB (as call 3): the finds' own choice among the
#    default and the alternates, the 32-deep ones among them, against cuDNN's best plan in one harness.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite
MIOFIND_BIG_TESTS=1 timeout 150 python3 -m pytest -m gpu tests/implicit_gemm_hopper/test_index_boundaries.py -k "pad" -v \
  -p no:cacheprovider -rfEs -n 2 --durations=10 > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries.log | head; tail -1 $R/boundaries.log
for key in Fpad Bpad; do
  timeout 80 python3 bench/results/session-nov29j/call5/negative_control_row64.py $key 342 row64 \
    >> $R/negative_control.jsonl 2>> $R/negative_control.err
  echo "$key rc=$?"
done
cut -c1-200 $R/negative_control.jsonl; save
export MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none
left=$(( 560 - $(el) ))
timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs FB --set padded \
  --out $R/nosys_padded_FB > $R/nosys_padded_FB.txt 2>&1
echo "FB rc=$? $(el) s"; grep -E "harness, geometric mean" $R/nosys_padded_FB.txt; save
