#!/usr/bin/env bash
# Session nov29a, call 3 (any sm_90): ConvImplicitGemmHopperWrwTf32Rn after its default rule was read off call 2's
# sweep (128 x 256 tiles at 3 stages where K > 64 and N > 128; 4 stages otherwise).
# 1. GPU tests: the solver's, the rounding TF32 forward/backward data (whose RS wgmma helpers moved to a header), the
#    C++ replay of its recipes (tests/torch/test_fast.py), the API and tiered finds, the stress test;
# 2. benchmark-mode finds of three TF32 NHWC backward-weights layers with an empty user DB and no system DB: what a
#    user's find now picks and how fast.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 240 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_wrw_tf32_rn.py \
  tests/implicit_gemm_hopper/test_tf32_rn.py > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(el) s"; tail -2 $R/tests_hopper.log; save
timeout 200 python3 -m pytest -q -m gpu tests/torch/test_fast.py -k "hopper_tensor_map" > $R/tests_fast.log 2>&1
echo "fast rc=$? $(el) s"; tail -2 $R/tests_fast.log
timeout 200 python3 -m pytest -q -m gpu -n 8 tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py \
  tests/core/test_stress_gpu.py > $R/tests_core.log 2>&1
echo "core rc=$? $(el) s"; tail -2 $R/tests_core.log; save
for L in "-c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1" "-c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2" \
         "-c 192 -H 17 -W 17 -k 192 -y 1 -x 7 -p 0 -q 3"; do
  MIOFIND_SYSTEM_DB=none timeout 120 python3 -m miofind find conv -n 32 $L -I NHWC -f NHWC -O NHWC --tf32 1 -F 4 \
    --mode benchmark --db /tmp/u.sqlite
done > $R/find.log 2>&1
echo "find rc=$? $(el) s"; cat $R/find.log | head -60; save
