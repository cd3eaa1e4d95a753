#!/usr/bin/env bash
# Session nov29h, call 9 (any sm_90; an H200): the padded index-boundary cases again with 96 output channels (call 8's
# negative control was blind: with 64 the output stayed under 2^31 elements, and the input, which crossed it, is read
# by the copy engine, not through the kernel's offsets), then their negative control (n = 342 rebuilt with 32-bit
# offsets; exit 0 = caught).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy9 MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_DB=sqlite:////tmp/u9.sqlite
MIOFIND_BIG_TESTS=1 timeout 150 python3 -m pytest -m gpu tests/implicit_gemm_hopper/test_index_boundaries.py -k pad -v \
  -p no:cacheprovider -rfEs -n 2 --durations=10 > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries.log | head; tail -1 $R/boundaries.log
for key in Fpad Bpad; do
  timeout 100 python3 bench/results/session-nov29h/call8/negative_control_pad.py $key 342 >> $R/negative_control.jsonl \
    2>> $R/negative_control.err
  echo "$key rc=$?"
done
cat $R/negative_control.jsonl; tar czf $OUT/r.tgz -C /tmp r
