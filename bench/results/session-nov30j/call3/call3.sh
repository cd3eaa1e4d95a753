#!/usr/bin/env bash
# Session nov30j, call 3 (any sm_90; an H200): armed module calls under autocast now cast x and the bias in C++
# (before: a module whose input needed autocast's cast, or with a bias, took conv_normalized's Python every call:
# ConvNeXt-T armed 0 of 22, wav2vec2 5 of 8); bench_models waits until no background job is left and records any
# during timing. (1) GPU tests as call 2; (2) wav2vec2_base AMP and ConvNeXt-T AMP training, 5 rounds, --profile.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_KERNEL_CACHE=/tmp/kc3
timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "not resnet50 and not resnext101" > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; save
run() {  # model config timeout [options]
  local m=$1 c=$2 t=$3; shift 3
  MIOFIND_DB=sqlite:////tmp/r/u_${m}_$c.sqlite timeout $t python3 bench/bench_models.py --out $R/${m}_$c --models $m \
    --configs $c --iters 10 --rounds 5 --warmup 3 --steps 3 "$@" > $R/${m}_$c.log 2>&1
  echo "$m $c rc=$? $(el) s"; grep -E "^\| $m" $R/${m}_$c/bench_models.md; save
}
run wav2vec2_base train8-amp 150 --profile --skip-first
run convnext_tiny train8-amp 170 --profile --skip-first
echo "all $(el) s"
