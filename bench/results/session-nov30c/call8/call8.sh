#!/usr/bin/env bash
# Session nov30c, call 8 (any sm_90), at the final kernel code (the 192-wide tiles; multicast B reverted): the
# miofind.torch C++ path's tensor-map recipes (two 192-wide cases new), then the GPU tests of the copy-engine store,
# the NCHW wrappers and the fused epilogue, whose find lists now hold the 192-wide twins where N % 192 == 0.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_DB=sqlite:////tmp/u8.sqlite CUPY_CACHE_DIR=/tmp/cupy8
timeout 120 python3 -m pytest -v -m gpu -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" > $R/tests_cpp.log 2>&1
echo "cpp tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_cpp.log; grep -E " FAILED| ERROR" $R/tests_cpp.log | head
tail -1 $R/tests_cpp.log; save
left=$(( 330 - $(el) ))
timeout $left python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_store.py \
  tests/implicit_gemm_hopper/test_nchw.py tests/implicit_gemm_hopper/test_fused_epilogue.py > $R/tests_fnb.log 2>&1
echo "store/nchw/fused rc=$? $(el) s"; grep -cE " PASSED" $R/tests_fnb.log; grep -E " FAILED| ERROR" $R/tests_fnb.log | head
tail -1 $R/tests_fnb.log
gzip -f $R/*.log; save; echo "all $(el) s"
