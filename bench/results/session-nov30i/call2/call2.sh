#!/usr/bin/env bash
# Session nov30i, call 2 (any sm_90; an H200): convert() now swaps subclasses of nn.ConvNd that leave the convolution's
# code alone (torchvision's video Conv3DSimple) and weight-normed convolutions. (1) miofind.torch GPU tests: the new
# subclass / weight-norm test, the 1D/3D/autocast and tiny-CNN tests; (2) the new user's trial again: r3d_18 (now
# all 20 convolutions swapped) and torchaudio's wav2vec2_base (its weight-normed positional convolution now swapped),
# training at batch 8, AMP (r3d_18 in channels_last_3d), against cuDNN's benchmark mode in the same process.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_KERNEL_CACHE=/tmp/kc2
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_torch_gpu.py \
  -k "subclass_and_weight_norm or conv1d_conv3d or tiny_cnn" > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; save
run() {  # model config timeout
  MIOFIND_DB=sqlite:////tmp/r/u_$1_$2.sqlite timeout $3 python3 bench/bench_models.py --out $R/$1_$2 --models $1 \
    --configs $2 --iters 10 --rounds 2 --warmup 3 --steps 5 > $R/$1_$2.log 2>&1
  echo "$1 $2 rc=$? $(el) s"; grep -E "^\| $1" $R/$1_$2/bench_models.md; save
}
run r3d_18 train8-amp 230
run wav2vec2_base train8-amp 180
echo "all $(el) s"
