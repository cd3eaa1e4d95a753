#!/usr/bin/env bash
# Session nov29a, call 4 (any sm_90): the TF32 backward weights' NCHW wrapper (ConvImplicitGemmHopperWrwTf32RnNchw, row
# 48) and the stress test with both new solvers in its pool.
# 1. GPU tests: test_nchw.py's TF32 W cases (float64 at every find config; bit for bit the NHWC solver's output on the
#    permuted data), the stress test, the C++ replay of both new solvers' recipes;
# 2. compute-sanitizer memcheck + racecheck on the wrapper's tiny problem;
# 3. sweeps beside cuDNN: NCHW ResNet-50 N=32 (the wrapper and the NCHW own solvers at their find configs), and NHWC
#    VGG-16 and U-Net N=32 (the new solver's 3- and 4-stage configs; other own solvers at their find configs).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_nchw.py -k "WrwTf32" \
  tests/core/test_stress_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.log
timeout 120 python3 -m pytest -q -m gpu tests/torch/test_fast.py -k "hopper_tensor_map and (W12 or W13 or W18)" \
  > $R/tests_fast.log 2>&1
echo "fast rc=$? $(el) s"; tail -2 $R/tests_fast.log; save
OUT=$R/san SANITIZE_TIMEOUT=60 timeout 150 scripts/sanitize --solvers ConvImplicitGemmHopperWrwTf32RnNchw --every 2>&1 | tail -3
echo "sanitize $(el) s"; save
S=ConvImplicitGemmHopperWrwTf32Rn
timeout 130 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --layout NCHW --solver ${S}Nchw \
  --set resnet50 --layers all --where "STAGES=99" --others ${S}Nchw,ConvImplicitGemmWrw,GemmWrwUniversal \
  --iters 20 --deadline 120 --json $R/sweep_r50_nchw.json > $R/sweep_r50_nchw.log 2>&1
echo "r50 nchw rc=$? $(el) s"; tail -6 $R/sweep_r50_nchw.log; save
for SET in vgg16 unet; do
  timeout 110 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --solver $S --set $SET --layers all \
    --where "STAGES=3|4" --others ConvImplicitGemmWrw,GemmWrwUniversal,GemmWrw1x1_stride1 --iters 20 --deadline 100 \
    --json $R/sweep_$SET.json > $R/sweep_$SET.log 2>&1
  echo "$SET rc=$? $(el) s"; tail -3 $R/sweep_$SET.log; save
done
