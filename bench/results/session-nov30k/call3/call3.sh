#!/usr/bin/env bash
# Session nov30k, call 3 (any sm_90; an H200): the training step under torch.compile(mode="reduce-overhead"), cuDNN
# benchmark mode against miofind.torch in one process (bench/bench_compile_step.py, new): what a user who compiles the
# model to get the host out of the step sees. ResNet-50 AMP batch 32 (the shipped DB's problems), then ConvNeXt-T AMP
# batch 8 (its fused-bias downsampling layers, found here).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_KERNEL_CACHE=/tmp/kc3
run() {  # model config timeout
  MIOFIND_DB=sqlite:////tmp/r/u_$1.sqlite timeout $3 python3 bench/bench_compile_step.py --out $R/compile_$1_$2 \
    --models $1 --configs $2 --mode reduce-overhead --iters 20 --rounds 5 > $R/compile_$1_$2.log 2>&1
  echo "$1 $2 rc=$? $(el) s"; tail -2 $R/compile_$1_$2.log | cut -c1-600; save
}
run resnet50 train32-amp 290
run convnext_tiny train8-amp 260
echo "all $(el) s"
