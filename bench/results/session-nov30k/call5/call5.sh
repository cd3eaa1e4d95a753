#!/usr/bin/env bash
# Session nov30k, call 5 (any sm_90; an H200): issue 17's FP32 targets (MobileNetV2 >= 1.3x, ResNet-50 >= 1.15x; eager
# MobileNetV2 is host-bound at about 1.2x) under torch.compile(mode="reduce-overhead"), where the host is out of the
# step and Inductor writes the batch norms on both sides: batch-32 training, FP32 with TF32 off, shipped DB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5
run() {  # model config timeout
  MIOFIND_DB=sqlite:////tmp/r/u_$1.sqlite timeout $3 python3 bench/bench_compile_step.py --out $R/compile_$1_$2 \
    --models $1 --configs $2 --mode reduce-overhead --iters 20 --rounds 5 > $R/compile_$1_$2.log 2>&1
  echo "$1 $2 rc=$? $(el) s"; grep "^| $1" $R/compile_$1_$2/bench_compile_step.md; save
}
run mobilenet_v2 train32-fp32 200
run resnet50 train32-fp32 200
echo "all $(el) s"
