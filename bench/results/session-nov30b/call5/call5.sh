#!/usr/bin/env bash
# Session nov30b, call 5 (any sm_90): after resident B (PERSIST = 2) in F and B and its twins in their finds: the index
# boundary cases of F and B with the filter resident (n = 511 / 513, 32- and 64-bit offsets), the miofind.torch C++
# path's tensor-map recipes, then the Hopper F/B GPU suite (whose find-config tests now measure the twins).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5
timeout 170 python3 -m pytest -v -m "gpu and big" -n 2 -p no:cacheprovider tests/implicit_gemm_hopper/test_index_boundaries.py \
  -k resident > $R/tests_boundary.log 2>&1
echo "boundary rc=$? $(el) s"; grep -cE " PASSED" $R/tests_boundary.log; grep -E " FAILED| ERROR" $R/tests_boundary.log | head
tail -1 $R/tests_boundary.log; save
timeout 100 python3 -m pytest -v -m gpu -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" > $R/tests_cpp.log 2>&1
echo "cpp tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_cpp.log; grep -E " FAILED| ERROR" $R/tests_cpp.log | head
tail -1 $R/tests_cpp.log; save
left=$(( 560 - $(el) ))
timeout $left python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  tests/implicit_gemm_hopper/test_fused_epilogue.py tests/implicit_gemm_hopper/test_nchw.py \
  tests/implicit_gemm_hopper/test_tma.py tests/implicit_gemm_hopper/test_pdl.py > $R/tests_fb.log 2>&1
echo "F/B suite rc=$? $(el) s"; grep -cE " PASSED" $R/tests_fb.log; grep -E " FAILED| ERROR" $R/tests_fb.log | head
tail -1 $R/tests_fb.log
gzip -f $R/*.log; save; echo "all $(el) s"
