#!/usr/bin/env bash
# Session nov29g call 2: the new stream-K forward (ConvImplicitGemmHopperFwdStreamK, registry row 50).
# 1. its GPU tests (test_stream_k.py: the find configs of 8 cases x FP16/BF16, every config on one problem, bitwise
#    reproducibility on a garbage workspace), the family's claim grid, the C++ replay of the Hopper recipes (two
#    stream-K cases among them), its two index-boundary cases (n = 511 / 513);
# 2. compute-sanitizer racecheck and memcheck on it;
# 3. the same-run side-by-side of F (every own solver at its find configs and every cuDNN plan, one find per problem):
#    ResNet-50 N=32 FP16 and BF16 NHWC, and the non-ResNet set in FP16.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u.sqlite
timeout 240 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 8 --durations=10 \
  tests/implicit_gemm_hopper/test_stream_k.py "tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py" \
  "tests/torch/test_fast.py::test_hopper_tensor_map_kernels_launch_from_cpp" -k "StreamK or stream_k or hopper_tensor_map" \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20; tail -1 $R/tests.log; save
MIOFIND_BIG_TESTS=1 timeout 90 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 2 \
  tests/implicit_gemm_hopper/test_index_boundaries.py -k Fsk > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries.log | head; tail -1 $R/boundaries.log; save
OUT_SAVE=$OUT; OUT=$R/sanitize SANITIZE_TIMEOUT=100 timeout 230 scripts/sanitize --solvers ConvImplicitGemmHopperFwdStreamK --every \
  > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s"; tail -3 $R/sanitize.txt; OUT=$OUT_SAVE; save
for run in "FP16 resnet50" "BF16 resnet50" "FP16 nonresnet"; do
  set -- $run
  left=$(( 580 - $(el) )); [ $left -lt 30 ] && break
  timeout $left python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs F --set $2 \
    --out $R/samerun > $R/samerun_F_$1_$2.txt 2>&1
  echo "samerun $1 $2 rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F_$1_$2.txt; save
done
echo "all $(el) s"
