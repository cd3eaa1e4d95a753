#!/usr/bin/env bash
# Session nov30i, call 7 (any sm_90; an H200): how far AMP's gradients are from FP32's on each side. Call 6:
# r2plus1d_18's AMP gradients after one step 46% (relative L2, a batch-norm bias; 36% a convolution's weight) from
# cuDNN's AMP run, which repeats itself bit for bit. Now both AMP sides against the same step in FP32 (cuDNN, TF32
# off): r2plus1d_18 and r3d_18, AMP training at batch 8, one step compared, no first-iteration children.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_KERNEL_CACHE=/tmp/kc7
for m in r2plus1d_18 r3d_18; do
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout 140 python3 bench/bench_models.py --out $R/${m}_amp --models $m \
    --configs train8-amp --iters 5 --rounds 1 --warmup 2 --steps 1 --skip-first > $R/${m}_amp.log 2>&1
  echo "$m rc=$? $(el) s"; python3 -c "
import json; r=json.load(open('$R/${m}_amp/bench_models.json'))['rows'][0]; print(r.get('vs_fp32'), r.get('error'))"; save
done
echo "all $(el) s"
