#!/usr/bin/env bash
# Session nov29j, call 2 (any sm_90; an H200): the forward's find with the 32-deep alternates (ALTERNATE_TILES_ROW64).
# 1. GPU tests: test_row64.py, test_bn32.py, the padded forward tests, the Hopper F/B suite (as session nov29i's call 3),
#    and miofind.torch's C++ path with the Hopper tensor maps (two TMA = 2 recipes among them).
# 2. Same run, FP16 NHWC N = 32, forward: PADDED_C and NON_RESNET through bench_convs.py (find, then our best against
#    cuDNN's best plan in one harness).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2
timeout 250 python3 -m pytest -v -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  tests/implicit_gemm_hopper/test_bn32.py tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py tests/implicit_gemm_hopper/test_fused_epilogue.py \
  tests/implicit_gemm_hopper/test_nchw.py tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  -k "not wrw and not Wrw and not tf32 and not Tf32" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head -20; tail -1 $R/tests.log
save
export MIOFIND_KERNEL_CACHE=/tmp/kc2t MIOFIND_DB=sqlite:////tmp/u2t.sqlite
timeout 90 python3 -m pytest -m gpu -v -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" -n 6 \
  > $R/torch.log 2>&1
echo "torch rc=$? $(el) s"; grep -E "FAILED|ERROR" $R/torch.log | head; tail -1 $R/torch.log; save
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite MIOFIND_SPECIALIZE=sync
for set in padded nonresnet; do
  left=$(( 585 - $(el) )); [ $left -lt 40 ] && { echo "skip $set: $left s left"; continue; }
  rm -f /tmp/u2.sqlite
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F --set $set \
    --out $R/samerun_$set > $R/samerun_F_$set.txt 2>&1
  echo "$set rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_F_$set.txt; save
done
