#!/usr/bin/env bash
# Session nov29g call 7: the Hopper W solver's RG (the split's reduce groups, derived from the split: 4 / 8 / 16).
# Its GPU tests (the family's W tests, NCHW W included), the same-run W at the find configs (empty user DB), then
# call 4's guided tune of ResNet-50's W and the same-run W reading it.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc
MIOFIND_DB=sqlite:////tmp/u7t.sqlite timeout 240 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 10 \
  tests/implicit_gemm_hopper tests/core/test_tiered_gpu.py -k "wrw or Wrw or tiered" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20; tail -1 $R/tests.log; save
export MIOFIND_DB=sqlite:////tmp/u7.sqlite
MIOFIND_SPECIALIZE=sync timeout 120 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_find > $R/samerun_W_find.txt 2>&1
echo "samerun (find configs) rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W_find.txt; save
timeout 150 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --tune-solver GemmWrw1x1_stride1 --tune-solver ConvImplicitGemmHopperWrw --strategy guided --max-configs 48 \
  --max-seconds 6 --json-out $R/tune_guided.json > $R/tune_guided.txt 2>&1
echo "tune rc=$? $(el) s"; tail -1 $R/tune_guided.txt; save
MIOFIND_SPECIALIZE=sync timeout 120 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_tuned > $R/samerun_W_tuned.txt 2>&1
echo "samerun (tuned) rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W_tuned.txt; save; echo "all $(el) s"
