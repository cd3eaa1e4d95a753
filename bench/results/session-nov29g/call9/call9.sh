#!/usr/bin/env bash
# Session nov29g call 9: call 7's selection of the Hopper family's W GPU tests again (-v: each test's outcome), on call
# 7-8's machine (its kernel cache at /tmp/kc, if still there).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u9.sqlite
timeout 165 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -v -n 14 --durations=10 tests/implicit_gemm_hopper \
  -k "wrw or Wrw" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; grep -c " PASSED" $R/tests.log; tail -1 $R/tests.log; save
