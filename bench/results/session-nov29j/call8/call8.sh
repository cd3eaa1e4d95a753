#!/usr/bin/env bash
# Session nov29j, call 8 (any sm_90; an H200): the Hopper family's F and B GPU tests at the session's final kernels and
# find configs (as call 2: claims, find configs, persistent, three-warpgroup and stride-phase tests, the fused epilogue,
# the NCHW wrappers, the copy-engine store, the tiered and API finds, the 32-deep and 32-wide tests, the padded tests).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_DB=sqlite:////tmp/u8.sqlite CUPY_CACHE_DIR=/tmp/cupy8
timeout 200 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  tests/implicit_gemm_hopper/test_bn32.py tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py tests/implicit_gemm_hopper/test_fused_epilogue.py \
  tests/implicit_gemm_hopper/test_nchw.py tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  -k "not wrw and not Wrw and not tf32 and not Tf32" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head -20; tail -1 $R/tests.log
gzip $R/tests.log; save
