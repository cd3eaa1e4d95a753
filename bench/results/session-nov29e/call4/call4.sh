#!/usr/bin/env bash
# Session nov29e, call 4 (any sm_90): GPU tests after ConvImplicitGemmHopperFwdTmaStore joined the registry (a new
# candidate of every FP16/BF16 NHWC forward find with C % 64 == 0): miofind.torch's GPU tests (finds in a PyTorch
# process, AMP channels_last models), the Hopper family's pinned claims against the float64 reference (its 2 among
# them), and the API, tiered, prepared and find-mode tests; then the serial timing tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_DB=sqlite:////tmp/tests4.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc4
timeout 230 python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider tests/torch > $R/torch_tests.log 2>&1
echo "torch tests rc=$? $(el) s"; grep -E "passed|failed|FAILED|Error" $R/torch_tests.log | tail -6; save
left=$(( 510 - $(el) ))
timeout $left python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider \
  "tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py::test_hopper_solver" tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py tests/core/test_prepared_gpu.py tests/core/test_find_modes.py > $R/core_tests.log 2>&1
echo "core tests rc=$? $(el) s"; grep -E "passed|failed|FAILED|Error" $R/core_tests.log | tail -6; save
left=$(( 570 - $(el) ))
[ $left -gt 20 ] && timeout $left python3 -m pytest -q -m "gpu and serial" -p no:cacheprovider tests/core/test_timing_gpu.py \
  > $R/serial.log 2>&1; echo "serial rc=$? $(el) s"; tail -1 $R/serial.log
gzip -f $R/*.log; save; echo "all $(el) s"
