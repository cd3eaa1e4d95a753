#!/usr/bin/env bash
# Session nov29d, call 6 (any sm_90): miofind.torch's GPU tests at the session's final code. Its finds run in a PyTorch
# process, where find.first_run's scratch comes from PyTorch's allocator (b22e111c); calls 4-5 ran only the API,
# tiered, prepared and timing tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_DB=sqlite:////tmp/tests6.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc6
timeout 230 python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider tests/torch > $R/torch_tests.log 2>&1
echo "torch tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|FAILED|Error" $R/torch_tests.log | tail -8
tar czf $OUT/r.tgz -C /tmp r
