#!/usr/bin/env bash
# Session nov29g call 8: the Hopper W reduce-group GPU test (16, 8, 4 groups against the float64 reference), then the
# tiered-find GPU tests alone (call 7's selection ran out of time with one test unfinished: the tiered file was in it).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u8.sqlite
timeout 60 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -v tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k reduce_groups_gpu > $R/rg_tests.log 2>&1
echo "rg tests rc=$? $(el) s"; grep -E "PASSED|FAILED|ERROR" $R/rg_tests.log | head; tail -1 $R/rg_tests.log; save
timeout 150 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 --durations=5 tests/core/test_tiered_gpu.py \
  > $R/tiered.log 2>&1
echo "tiered rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tiered.log | head; tail -1 $R/tiered.log; save
