#!/usr/bin/env bash
# Session nov30i, call 3 (any sm_90; an H200): what call 2's trial left open. (1) wav2vec2_base AMP training, 0.95x
# cuDNN, with --profile (each side's GPU busy time, host queue time, top kernels, miofind's picks) and the problems
# its second process found (call 2: 2 finds where 0 are due); (2) r3d_18 AMP and FP32 training with the gradient
# differences by parameter (call 2: one parameter's gradient 58% apart from cuDNN's while cuDNN agreed with itself).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_KERNEL_CACHE=/tmp/kc3
run() {  # model config timeout [options]
  local m=$1 c=$2 t=$3; shift 3
  MIOFIND_DB=sqlite:////tmp/r/u_${m}_$c.sqlite timeout $t python3 bench/bench_models.py --out $R/${m}_$c --models $m \
    --configs $c --iters 10 --rounds 2 --warmup 3 --steps 5 "$@" > $R/${m}_$c.log 2>&1
  echo "$m $c rc=$? $(el) s"; grep -E "^\| $m" $R/${m}_$c/bench_models.md; save
}
run wav2vec2_base train8-amp 200 --profile
run r3d_18 train8-amp 100 --skip-first
run r3d_18 train8-fp32 200
echo "all $(el) s"
