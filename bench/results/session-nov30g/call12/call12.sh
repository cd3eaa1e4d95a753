#!/usr/bin/env bash
# Session nov30g, call 12 (any sm_90): the final code (find_configs leaves the default to the background listing where a
# find measures one config of a solver at once): the tuning, API and tiered-find GPU tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy12 MIOFIND_KERNEL_CACHE=/tmp/kc12 MIOFIND_DB=sqlite:////tmp/u12.sqlite
timeout 230 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 tests/tuning tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20 | cut -c1-300; tail -1 $R/tests.log
gzip -f $R/tests.log; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
