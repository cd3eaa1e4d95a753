#!/usr/bin/env bash
# Session nov30g, call 5 (any sm_90): the GPU tests of the find, tuning, API, tiered find and miofind.torch at this code
# (a find measures the default beside a tuned config; tests/tuning/test_tune_gpu.py's new test of it).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite
timeout 500 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 tests/tuning tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py tests/torch > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20 | cut -c1-300; tail -1 $R/tests.log
grep -E "test_a_find_answers_no_slower|test_tune_stores_a_verified" $R/tests.log | head
gzip -f $R/tests.log; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
