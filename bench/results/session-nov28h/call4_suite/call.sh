#!/usr/bin/env bash
# Session nov28h, call 4: after the bridge GEMM also stands in until cuBLASLt's first query of a GEMM's own kind
# (68b9e764), the GPU suites that run cuBLASLt-backed solutions outside a find: the Winograd family and miofind.torch
# (AMP first steps meet the FP16 query), then tests/core, tests/cli and tests/tuning. Any sm_90 device.
# Usage (repo root, device machine): bash bench/results/session-nov28h/call4_suite/call.sh
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 300 python3 -m pytest -q -m "gpu and not serial" -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  tests/winograd tests/torch > $R/tests_winograd_torch.log 2>&1
echo "winograd+torch rc=$? $(el) s: $(tail -n 1 $R/tests_winograd_torch.log)"
grep -E "^(FAILED|ERROR)" $R/tests_winograd_torch.log | cut -c1-300 | head -20; save
left=$(( 540 - $(el) ))
timeout $left python3 -m pytest -q -m "gpu and not serial" -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  tests/core tests/cli tests/tuning > $R/tests_core_cli_tuning.log 2>&1
echo "core+cli+tuning rc=$? $(el) s: $(tail -n 1 $R/tests_core_cli_tuning.log)"
grep -E "^(FAILED|ERROR)" $R/tests_core_cli_tuning.log | cut -c1-300 | head -20
gzip -f $R/*.log; save
