#!/usr/bin/env bash
# Session nov27, call 9: the GPU tests that read the shipped DB and its cost model (torch, tuning, the API's), on the
# final DB and models of the session (call 8's W records, the retrained models): scripts/gpu-check, benchmarks off.
set -uo pipefail
R=$OUT/r; mkdir -p $R
BENCH=0 XDIST=16 OUT=$R timeout 420 scripts/gpu-check tests/torch tests/tuning tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py > $R/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -6 $R/gpu-check.log
tar czf $OUT/r.tgz -C $OUT r
