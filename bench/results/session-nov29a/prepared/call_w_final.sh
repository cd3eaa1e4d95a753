#!/usr/bin/env bash
# Prepared (session nov29a, not run: its device time was spent). Any sm_90. The rounding TF32 backward weights' final
# kernel (call 6's conflict-free transpose) where session nov29a measured only the first one: the stress test with both
# TF32 W solvers in its pool, and the VGG-16 / U-Net NHWC and ResNet-50 NCHW sweeps beside cuDNN and the older own
# solvers (call 4's commands, the new solver at a find's configs); then on the CPU `python
# bench/results/session-nov29a/call6/own_best.py r/sweep_*.json` (NCHW: `call4/nchw_before_after.py`).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 -m pytest -q -m gpu tests/core/test_stress_gpu.py > $R/tests_stress.log 2>&1
echo "stress rc=$? $(el) s"; tail -2 $R/tests_stress.log; save
S=ConvImplicitGemmHopperWrwTf32Rn
for SET in vgg16 unet; do
  timeout 120 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --solver $S --set $SET --layers all \
    --where "STAGES=99" --others $S,ConvImplicitGemmWrw,GemmWrwUniversal,GemmWrw1x1_stride1 --iters 20 --deadline 110 \
    --json $R/sweep_$SET.json > $R/sweep_$SET.log 2>&1
  echo "$SET rc=$? $(el) s"; grep -E "geomean $S alone" $R/sweep_$SET.log; save
done
timeout 130 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --layout NCHW --solver ${S}Nchw \
  --set resnet50 --layers all --where "STAGES=99" --others ${S}Nchw,ConvImplicitGemmWrw,GemmWrwUniversal \
  --iters 20 --deadline 120 --json $R/sweep_r50_nchw.json > $R/sweep_r50_nchw.log 2>&1
echo "r50 nchw rc=$? $(el) s"; grep -E "geomean" $R/sweep_r50_nchw.log | grep isolated; save
