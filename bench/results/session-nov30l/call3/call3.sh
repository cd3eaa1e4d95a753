#!/usr/bin/env bash
# Session nov30l, call 3 (any sm_90): torch.compile(mode="reduce-overhead") rows for issue 17's configurations not yet
# measured compiled (session nov30k's PLAN_next item 2): Inception-v3 batch-32 training, FP32 (TF32 off) and AMP
# channels_last, and ResNet-50 AMP batch-1 inference. Default flow (one eager step, settled, then compiled).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_KERNEL_CACHE=/tmp/kc3
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode reduce-overhead --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run inc_fp32 inception_v3 train32-fp32 220
run inc_amp inception_v3 train32-amp 200
run r50_infer1_amp resnet50 infer1-amp 110
echo "all $(el) s"
