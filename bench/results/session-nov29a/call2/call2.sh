#!/usr/bin/env bash
# Session nov29a, call 2 (any sm_90): the new Hopper TF32 backward-weights solver (ConvImplicitGemmHopperWrwTf32Rn).
# 1. its GPU tests (float64 reference at every find config and every config of two problems, rounding not truncation);
# 2. compute-sanitizer memcheck + racecheck on the tiny problem it claims, split (default) and unsplit;
# 3. sweeps beside cuDNN's TF32 plans, the Ampere TF32 implicit GEMM and the GEMM solvers: ResNet-50 N=32 W layers and
#    the non-ResNet set, FP32 data with TF32 math, NHWC (the new solver's configs of 3, 4 or 6 stages).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 200 python3 -m pytest -q -m gpu -n 8 -x tests/implicit_gemm_hopper/test_wrw_tf32_rn.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -4 $R/tests.log; save
S=ConvImplicitGemmHopperWrwTf32Rn
OUT=$R/san SANITIZE_TIMEOUT=90 timeout 200 scripts/sanitize --solvers $S --every 2>&1 | tail -4
OUT=$R/san1 SANITIZE_TIMEOUT=90 timeout 200 scripts/sanitize --solvers $S --every \
  --config '{"WG_M": 1, "BN": 128, "STAGES": 4, "SPLITK": 1}' 2>&1 | tail -4
echo "sanitize $(el) s"; save
OTH=ConvImplicitGemmWrw,GemmWrwUniversal,GemmWrw1x1_stride1
timeout 200 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --solver $S --set resnet50 --layers all \
  --where "STAGES=3|4|6" --others $OTH --iters 20 --deadline 190 --json $R/sweep_r50.json > $R/sweep_r50.log 2>&1
echo "r50 rc=$? $(el) s"; tail -8 $R/sweep_r50.log; save
timeout 150 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --solver $S --set nonresnet --layers all \
  --where "STAGES=3|4|6" --others $OTH --iters 20 --deadline 140 --json $R/sweep_nr.json > $R/sweep_nr.log 2>&1
echo "nr rc=$? $(el) s"; tail -8 $R/sweep_nr.log; save
