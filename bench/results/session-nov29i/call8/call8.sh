#!/usr/bin/env bash
# Session nov29i, call 8 (an H200): the Hopper forward's 32-wide tiles (BN = 32, m64n32k16).
# 1. tests/implicit_gemm_hopper/test_bn32.py on the GPU (every kind of 32-wide config against the float64 reference).
# 2. `miofind tune` of the Hopper forward on seven real layers of at most 32 output channels (DenseNet-121's 3x3
#    128 -> 32 at 28 and 7, Inception-v3's 32 -> 32 stem, MobileNetV2's 1x1 layers to 16, 24 and 32), exhaustive over
#    the 32-wide configs (--where BN=32), then over the 64-wide ones (--where BN=64) into another user DB, at most 200
#    configs / 30 s a layer each; each tune ends with a find of every solver (cuDNN's plans too).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc8 CUPY_CACHE_DIR=/tmp/cupy8 MIOFIND_DB=sqlite:////tmp/u8.sqlite
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_bn32.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; tail -1 $R/tests.log; save
F=bench/results/session-nov29i/call8/layers.txt
for side in "bn32 BN=32" "bn64 BN=64"; do
  set -- $side
  left=$(( 400 - $(el) )); [ $left -lt 60 ] && { echo "skip $1: $left s left"; continue; }
  MIOFIND_DB=sqlite:///$R/$1.sqlite timeout $left python3 -m miofind tune --file $F \
    --tune-solver ConvImplicitGemmHopperFwd --strategy exhaustive --where $2 --max-configs 200 --max-seconds 30 \
    --patience 200 --retune --json-out $R/tune_$1.json > $R/tune_$1.txt 2>&1
  echo "$1 rc=$? $(el) s"; tail -1 $R/tune_$1.txt; save
done
