#!/usr/bin/env bash
# Session nov30l, call 4 (any sm_90): call 3 found compiled inference under autocast 28x slower than cuDNN (ResNet-50
# batch 1: 24.0 against 0.87 ms): _cast_param's weight-cast cache broke Dynamo's graph at every weight and hit the
# recompile limit. Fixed (a plain .to under torch.compile). (1) the GPU compile tests, with the new inference one;
# (2) ResNet-50 batch-1 inference compiled, AMP and FP32, and MobileNetV2 batch-1 AMP (reduce-overhead, default flow).
# Inception-v3's rows (call 3) need more than 200 s each on a fresh machine and are left out.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_KERNEL_CACHE=/tmp/kc4
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/torch/test_torch_gpu.py -k "compile or cuda_graph" \
  > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.txt; grep -E "^(FAILED|ERROR)" $R/tests.txt | head; save
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode reduce-overhead --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run r50_infer1_amp resnet50 infer1-amp 110
run r50_infer1_fp32 resnet50 infer1-fp32 100
run mnv2_infer1_amp mobilenet_v2 infer1-amp 90
echo "all $(el) s"
