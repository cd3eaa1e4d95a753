#!/usr/bin/env bash
# Session nov28g, call 4: after the swapped-operand NCHW wrappers turned on by default (18409e8), the GPU suite of the
# parts a default find now reaches with them: the Hopper family, miofind.torch, the find and API tests, the stress test.
# Any sm_90 device. Usage (repo root, device machine): bash bench/results/session-nov28g/call4_suite/call.sh
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 300 python3 -m pytest -q -m "gpu and not serial" -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  tests/implicit_gemm_hopper tests/torch > $R/tests_hopper_torch.log 2>&1
echo "hopper+torch rc=$? $(el) s: $(tail -n 1 $R/tests_hopper_torch.log)"; grep -E "^(FAILED|ERROR)" $R/tests_hopper_torch.log | cut -c1-300 | head -20; save
left=$(( 500 - $(el) ))
timeout $left python3 -m pytest -q -m "gpu and not serial" -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  tests/core/test_api_gpu.py tests/core/test_prepared_gpu.py tests/core/test_tiered_gpu.py tests/core/test_stress_gpu.py \
  tests/core/test_verify_gpu.py tests/core/test_wrong_solver_gpu.py > $R/tests_core.log 2>&1
echo "core rc=$? $(el) s: $(tail -n 1 $R/tests_core.log)"; grep -E "^(FAILED|ERROR)" $R/tests_core.log | cut -c1-300 | head -20
gzip -f $R/*.log; save
