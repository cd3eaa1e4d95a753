#!/usr/bin/env bash
# Session nov30l, call 1 (any sm_90): (1) GPU tests of miofind.torch at this code (session nov30k's refactor 4aa99b93
# had not run on a GPU); (2) MobileNetV2 AMP batch-32 training under torch.compile(mode="reduce-overhead"), the default
# flow (an eager step first: host-aware choices) and then --compile-first in a second process on the same kernel cache
# and user DB (choices made under CUDA-graph trees: by GPU time alone, new in this session). MobileNetV2 AMP is the
# model whose shipped records give the most host-aware picks (about 30 of 90 problems, 53-116 us of GPU time a step).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_KERNEL_CACHE=/tmp/kc1
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "not resnet50 and not resnext101" > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; grep -E "^(FAILED|ERROR)" $R/tests.txt | head; save
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode reduce-overhead --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run mnv2_amp_default mobilenet_v2 train32-amp 180
run mnv2_amp_first mobilenet_v2 train32-amp 170 --compile-first
echo "all $(el) s"
