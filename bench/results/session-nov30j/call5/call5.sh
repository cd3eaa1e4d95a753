#!/usr/bin/env bash
# Session nov30j, call 5 (any sm_90; an H200): call 4's wav2vec2 batch-32 run timed the Python path (the C++
# extension still building: bench_models' settle waited only for a build already started, and a process starts it at
# its second step). Now settle starts it. (1) wav2vec2_base AMP training, batch 32; (2) r3d_18 AMP training, batch 8,
# after the backward's layout change (nov30i: 0.90-1.04x).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5
run() {  # model config timeout [options]
  local m=$1 c=$2 t=$3; shift 3
  MIOFIND_DB=sqlite:////tmp/r/u_${m}_$c.sqlite timeout $t python3 bench/bench_models.py --out $R/${m}_$c --models $m \
    --configs $c --iters 10 --rounds 5 --warmup 3 --steps 3 "$@" > $R/${m}_$c.log 2>&1
  echo "$m $c rc=$? $(el) s"; grep -E "^\| $m" $R/${m}_$c/bench_models.md; save
}
run wav2vec2_base train32-amp 200 --skip-first
run r3d_18 train8-amp 130 --skip-first
echo "all $(el) s"
