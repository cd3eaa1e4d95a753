#!/usr/bin/env bash
# Session nov29i, call 9 (an H200): the 32-wide tiles as find alternates (a 16-bit forward of at most 32 output channels
# tries the default and each alternate with BN = 32).
# 1. test_bn32.py on the GPU (call 8's walk test mended: 588 tiles), the NCHW and fused-epilogue tests whose find
#    configs now include 32-wide tiles.
# 2. Same run (bench_convs.py --cudnn-harness, every own solver and every cuDNN plan in one find), FP16 NHWC N = 32, F:
#    NON_RESNET (DenseNet's 3x3 128 -> 32 at 28 and 7) and PADDED_C (MobileNetV2's 1x1 layers to 16, 24, 32 and
#    Inception's 32 -> 32 stem).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc9 CUPY_CACHE_DIR=/tmp/cupy9 MIOFIND_DB=sqlite:////tmp/u9.sqlite
timeout 110 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_bn32.py \
  tests/implicit_gemm_hopper/test_nchw.py tests/implicit_gemm_hopper/test_fused_epilogue.py \
  -k "test_bn32 or c8 or c96_k160 or fused" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; tail -1 $R/tests.log; save
export MIOFIND_SPECIALIZE=sync
for set in nonresnet padded; do
  left=$(( 260 - $(el) )); [ $left -lt 30 ] && { echo "skip $set: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F --set $set \
    --out $R/samerun_$set > $R/samerun_F_$set.txt 2>&1
  echo "$set rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_F_$set.txt; save
done
