#!/usr/bin/env bash
# Session nov30f, call 6 (any sm_90): at cf885b2a's code (the W copy-engine configs at 8 stages in the space) the Hopper
# family's W tests and the tiered ones (as session nov29g's call 7), then the same-run W at the find configs (empty
# user DB, no system DB): bench_convs --cudnn-harness.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_SYSTEM_DB=none
MIOFIND_DB=sqlite:////tmp/u6t.sqlite timeout 300 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 \
  tests/implicit_gemm_hopper tests/core/test_tiered_gpu.py -k "wrw or Wrw or tiered" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20; tail -1 $R/tests.log; save
export MIOFIND_DB=sqlite:////tmp/u6.sqlite
MIOFIND_SPECIALIZE=sync timeout 150 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_find > $R/samerun_W_find.txt 2>&1
echo "samerun (find configs) rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W_find.txt; save; echo "all $(el) s"
