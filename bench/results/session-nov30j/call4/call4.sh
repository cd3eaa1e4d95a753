#!/usr/bin/env bash
# Session nov30j, call 4 (any sm_90; an H200): batch-8 steps of wav2vec2 and ConvNeXt-T are host-bound on both sides
# (calls 1-3: the host's speed drifts by tens of percent between rounds), where miofind's GPU time is the smaller
# (wav2vec2 AMP: 9.4 ms against cuDNN's 24.6). Batch 32, where the GPU's work counts: (1) wav2vec2_base AMP training
# with its fresh processes (the first step, and the second process's finds with the backward now keyed in the
# forward's layout); (2) ConvNeXt-T AMP training; (3) mc3_18 AMP training (batch 8), not tried before.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_KERNEL_CACHE=/tmp/kc4
run() {  # model config timeout [options]
  local m=$1 c=$2 t=$3; shift 3
  MIOFIND_DB=sqlite:////tmp/r/u_${m}_$c.sqlite timeout $t python3 bench/bench_models.py --out $R/${m}_$c --models $m \
    --configs $c --iters 10 --rounds 5 --warmup 3 --steps 3 "$@" > $R/${m}_$c.log 2>&1
  echo "$m $c rc=$? $(el) s"; grep -E "^\| $m" $R/${m}_$c/bench_models.md; save
}
run wav2vec2_base train32-amp 230
run convnext_tiny train32-amp 190 --skip-first
run mc3_18 train8-amp 120 --skip-first
echo "all $(el) s"
