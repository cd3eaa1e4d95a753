#!/usr/bin/env bash
# Session nov29d, call 5 (any sm_90): the GPU tests call 4 left: tests/gemm/test_first_run.py's GPU test after its fix
# (FindResult is the list of solutions) and the serial timing tests, which call 4's failure skipped.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_DB=sqlite:////tmp/tests5.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc5
timeout 200 python3 -m pytest -q -m "gpu and not serial" -p no:cacheprovider tests/gemm/test_first_run.py > $R/tests.log 2>&1
echo "first_run test rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/tests.log
timeout 120 python3 -m pytest -q -m "gpu and serial" -p no:cacheprovider tests/core/test_timing_gpu.py > $R/serial.log 2>&1
echo "serial rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/serial.log
tar czf $OUT/r.tgz -C /tmp r
