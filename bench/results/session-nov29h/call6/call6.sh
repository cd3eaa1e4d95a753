#!/usr/bin/env bash
# Session nov29h, call 6 (any sm_90; an H200): the Hopper family's F and B GPU tests at the final code (the padded K
# tiles change F and B defaults where C or K % 64 != 0, and the copy-engine-store forward's claims): every claim of the
# F and B solvers and the wrappers, the find-config, persistent, three-warpgroup and stride-phase tests, the fused
# epilogue, the NCHW wrappers, the tiered and API finds; -v, 14 workers, within the call's limit.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite CUPY_CACHE_DIR=/tmp/cupy6
timeout 500 python3 -m pytest -v -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  tests/implicit_gemm_hopper/test_fused_epilogue.py tests/implicit_gemm_hopper/test_nchw.py \
  tests/implicit_gemm_hopper/test_tma_store.py tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  -k "not wrw and not Wrw and not tf32 and not Tf32" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head -20; tail -2 $R/tests.log
save
