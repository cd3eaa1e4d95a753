#!/usr/bin/env bash
# Session nov30i, call 6 (any sm_90; an H200): wav2vec2_base AMP training again at the code of call 5, whose run of it
# failed in the gradient comparison (a parameter no step used: the encoder's layer drop; now off, and the comparison
# skips gradients neither side has): the second process must run no find (call 3: 2). Then torchvision's r2plus1d_18
# (its (2+1)D blocks: 1x3x3 and 3x1x1 convolutions, plain nn.Conv3d) AMP training, not tried before.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_KERNEL_CACHE=/tmp/kc6
MIOFIND_DB=sqlite:////tmp/r/u_w2v.sqlite timeout 220 python3 bench/bench_models.py --out $R/w2v_amp \
  --models wav2vec2_base --configs train8-amp --iters 10 --rounds 3 --warmup 3 --steps 1 > $R/w2v_amp.log 2>&1
echo "w2v amp rc=$? $(el) s"; grep -E "^\| wav" $R/w2v_amp/bench_models.md; save
MIOFIND_DB=sqlite:////tmp/r/u_r21.sqlite timeout 230 python3 bench/bench_models.py --out $R/r21_amp \
  --models r2plus1d_18 --configs train8-amp --iters 10 --rounds 3 --warmup 3 --steps 1 > $R/r21_amp.log 2>&1
echo "r2plus1d amp rc=$? $(el) s"; grep -E "^\| r2plus1d" $R/r21_amp/bench_models.md; save
echo "all $(el) s"
