#!/usr/bin/env bash
# Session nov30j, call 6 (any sm_90; an H200): batch-1 inference, the host-bound case that measures the hot path,
# of the two models this session gave armed calls to: wav2vec2_base (1-D plans, armed; FP32 and AMP) and ConvNeXt-T
# AMP (autocast's casts of x and the bias in C++).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_KERNEL_CACHE=/tmp/kc6
run() {  # model config timeout [options]
  local m=$1 c=$2 t=$3; shift 3
  MIOFIND_DB=sqlite:////tmp/r/u_${m}_$c.sqlite timeout $t python3 bench/bench_models.py --out $R/${m}_$c --models $m \
    --configs $c --iters 20 --rounds 5 --warmup 3 --steps 0 --skip-first "$@" > $R/${m}_$c.log 2>&1
  echo "$m $c rc=$? $(el) s"; grep -E "^\| $m" $R/${m}_$c/bench_models.md; save
}
run wav2vec2_base infer1-amp 75
run wav2vec2_base infer1-fp32 50
run convnext_tiny infer1-amp 60
echo "all $(el) s"
