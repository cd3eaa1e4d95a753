#!/usr/bin/env bash
# Session nov30f, call 9 (any sm_90): the GPU tests of tuning, find modes and the PyTorch path (tests/tuning,
# tests/core/test_api_gpu.py, tests/torch) at the code with the W copy-engine configs at 8 stages in the space.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u9.sqlite
timeout 420 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 tests/tuning tests/core/test_api_gpu.py \
  tests/torch > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20; tail -1 $R/tests.log
gzip -f $R/tests.log; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
