#!/usr/bin/env bash
# Session dec01a call 3: the 4 compile/graph tests that failed in call 1 only because the device lacks platformdirs
# and call 1 left MIOFIND_KERNEL_CACHE unset (miofind.compile.kernel_cache_dir's fallback), then session nov30l's
# mode="default" rows (prepared/call_default_mode.sh) for ResNet-50 FP32 and MobileNetV2 AMP.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/torch/test_torch_gpu.py \
  -k "reduce_overhead or cuda_graph or compile" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; save
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode default --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run r50_fp32_default resnet50 train32-fp32 200
run mnv2_amp_default mobilenet_v2 train32-amp 170
echo "all $(el) s"
