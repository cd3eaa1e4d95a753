#!/usr/bin/env bash
# Session nov29b, call 6 (any sm_90): the GPU tests a find's timing touches, at the final code (the timing in sets,
# find.Early reverted), through scripts/gpu-check (platformdirs carried in .whl/ beside SQLAlchemy and the cuDNN
# frontend): the API, tiered, isolate, prepared, timing (serial), verify, wrong-solver, reference and stress tests of
# tests/core, and tests/cudnn.
set -uo pipefail
T0=$(date +%s)
mkdir -p /tmp/r
export MIOFIND_KERNEL_CACHE=/tmp/kc
OUT=/tmp/r/gc BENCH=0 COLD=0 XDIST=8 timeout 390 scripts/gpu-check tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py tests/core/test_isolate_gpu.py tests/core/test_prepared_gpu.py \
  tests/core/test_timing_gpu.py tests/core/test_verify_gpu.py tests/core/test_wrong_solver_gpu.py \
  tests/core/test_reference_gpu.py tests/core/test_stress_gpu.py tests/cudnn > /tmp/r/gpu-check.log 2>&1
echo "gpu-check rc=$? $(( $(date +%s) - T0 )) s"; tail -8 /tmp/r/gpu-check.log
gzip -f /tmp/r/gc/*.log; tar czf $OUT/r.tgz -C /tmp r
