#!/usr/bin/env bash
# Prepared by session nov30l (not run: device time spent). PLAN_next item 1: Inception-v3 batch-32 training under
# torch.compile(mode="reduce-overhead"), the default flow. Each row took over 200 s on a fresh machine in call 3 (cold
# kernel cache: the eager step's specialised builds and settle; two compiles of a large graph), so one model config a
# row with 280 s each; CONFIGS="train32-fp32" or "train32-amp" runs one of them.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyi MIOFIND_KERNEL_CACHE=/tmp/kci
for c in ${CONFIGS:-train32-fp32 train32-amp}; do
  MIOFIND_DB=sqlite:////tmp/r/u_inc.sqlite timeout 280 python3 bench/bench_compile_step.py --out $R/inc_$c \
    --models inception_v3 --configs $c --mode reduce-overhead --iters 20 --rounds 5 > $R/inc_$c.log 2>&1
  echo "inc $c rc=$? $(el) s"; grep "^| inception_v3" $R/inc_$c/bench_compile_step.md; save
done
echo "all $(el) s"
