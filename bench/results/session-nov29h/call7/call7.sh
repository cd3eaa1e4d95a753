#!/usr/bin/env bash
# Session nov29h, call 7 (any sm_90; an H200): the padded copy-engine K tiles at the 32/64-bit index boundary:
# tests/implicit_gemm_hopper/test_index_boundaries.py's Fpad and Bpad cases (96 channels in the reduction, the padded
# default config, n = 341 and 342: the largest tensor just under and just over 2^31 elements), every output element
# written, sampled elements against float64.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_KERNEL_CACHE=/tmp/kc7
MIOFIND_BIG_TESTS=1 MIOFIND_DB=sqlite:////tmp/u7.sqlite timeout 200 python3 -m pytest -m gpu \
  tests/implicit_gemm_hopper/test_index_boundaries.py -k pad -v -p no:cacheprovider -rfEs -n 2 --durations=10 \
  > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries.log | head; tail -1 $R/boundaries.log; save
