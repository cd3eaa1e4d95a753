#!/usr/bin/env bash
# Session nov30l, call 2 (any sm_90): the host-aware choice under torch.compile(mode="reduce-overhead"), now off only
# for calls on a CUDA-graph tree's stream (b982621f; call 1's process-wide version also turned it off for miofind's
# eager step after the cuDNN side's compile, so call 1 had no host-aware side). Per model, two processes on one kernel
# cache and user DB: the default flow (an eager step first: host-aware choices, then compiled) and --compile-first
# (choices in the compiled graph's warm-up run: GPU time alone). MobileNetV2 and ResNet-50, AMP batch-32 training.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_KERNEL_CACHE=/tmp/kc2
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode reduce-overhead --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run mnv2_amp_default mobilenet_v2 train32-amp 160
run mnv2_amp_first mobilenet_v2 train32-amp 130 --compile-first
run r50_amp_default resnet50 train32-amp 160
run r50_amp_first resnet50 train32-amp 130 --compile-first
echo "all $(el) s"
