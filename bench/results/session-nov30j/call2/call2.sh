#!/usr/bin/env bash
# Session nov30j, call 2 (any sm_90; an H200): call 1 found wav2vec2's convolutions all on the Python path: their
# gradients arrive transposed, the backward took dy's layout (NHWC problems under an NCHW forward), so no planned
# backward was learned and no C++ plan made. Now the backward takes the forward's layout (PyTorch's rule).
# (1) GPU tests: test_fast.py (the 1-D test with its input fixed) and miofind.torch's GPU tests but the two
# whole-network ones; (2) wav2vec2_base AMP training with --profile (plans, CPU ops, cProfile of both sides) and its
# fresh processes; (3) its FP32 training; (4) ConvNeXt-T AMP training with --profile (call 1: 0.88x).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_KERNEL_CACHE=/tmp/kc2
timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "not resnet50 and not resnext101" > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; save
run() {  # model config timeout [options]
  local m=$1 c=$2 t=$3; shift 3
  MIOFIND_DB=sqlite:////tmp/r/u_${m}_$c.sqlite timeout $t python3 bench/bench_models.py --out $R/${m}_$c --models $m \
    --configs $c --iters 10 --rounds 3 --warmup 3 --steps 3 "$@" > $R/${m}_$c.log 2>&1
  echo "$m $c rc=$? $(el) s"; grep -E "^\| $m" $R/${m}_$c/bench_models.md; save
}
run wav2vec2_base train8-amp 170 --profile
run wav2vec2_base train8-fp32 100 --skip-first
run convnext_tiny train8-amp 150 --profile --skip-first
echo "all $(el) s"
