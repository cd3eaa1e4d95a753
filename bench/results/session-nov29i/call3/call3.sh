#!/usr/bin/env bash
# Session nov29i, call 3 (any sm_90; an H200), at the live-k-step kernel:
# 1. The Hopper family's F and B GPU tests (as session nov29h's call 6): claims, find configs, persistent, three-warpgroup
#    and stride-phase tests, the fused epilogue, the NCHW wrappers, the copy-engine store, the tiered and API finds.
# 2. miofind.torch's C++ path with the Hopper tensor maps (padded recipes among them).
# 3. Same run, FP16 NHWC N = 32: PADDED_C's W again with and without the padded configs (a second pair, in the other
#    order), then NON_RESNET F, B and W.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3
timeout 260 python3 -m pytest -v -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  tests/implicit_gemm_hopper/test_fused_epilogue.py tests/implicit_gemm_hopper/test_nchw.py \
  tests/implicit_gemm_hopper/test_tma_store.py tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  -k "not wrw and not Wrw and not tf32 and not Tf32" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head -20; tail -1 $R/tests.log
save
export MIOFIND_KERNEL_CACHE=/tmp/kc3t MIOFIND_DB=sqlite:////tmp/u3t.sqlite
timeout 90 python3 -m pytest -m gpu -v -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" -n 6 \
  > $R/torch.log 2>&1
echo "torch rc=$? $(el) s"; grep -E "FAILED|ERROR" $R/torch.log | head; tail -1 $R/torch.log; save
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite MIOFIND_SPECIALIZE=sync
for run in "after W padded" "before W padded --no-padded" "after FBW nonresnet"; do
  set -- $run
  left=$(( 585 - $(el) )); [ $left -lt 40 ] && { echo "skip $run: $left s left"; continue; }
  rm -f /tmp/u3.sqlite
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs $2 --set $3 ${4:-} \
    --out $R/$1_$2_$3 > $R/$1_$2_$3.txt 2>&1
  echo "$1 $2 $3 rc=$? $(el) s"; grep -E "harness, geometric mean" $R/$1_$2_$3.txt; save
done
