#!/usr/bin/env bash
# Session nov29a, call 6 (any sm_90): ConvImplicitGemmHopperWrwTf32Rn with its transpose's lanes remapped so that both
# its 16-byte loads and stores are free of bank conflicts (a diagonal (cq, jq) walk: before, the loads were two-way).
# 1. the solver's GPU tests and the NCHW wrapper's (float64 at every find config and every config of two problems);
# 2. the solver at a find's configs beside cuDNN's TF32 plans on ResNet-50 and the non-ResNet set (NHWC, N=32): to set
#    against call 2's figures (1.071 and 0.852 of cuDNN, each against cuDNN in its own run).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_wrw_tf32_rn.py tests/implicit_gemm_hopper/test_nchw.py \
  -k "wrw_tf32 or WrwTf32 or find_configs or every_config or rounded" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.log; save
S=ConvImplicitGemmHopperWrwTf32Rn
for SET in resnet50 nonresnet; do
  timeout 110 python3 bench/sweep_configs.py --dir W --dtype FP32 --math tf32 --solver $S --set $SET --layers all \
    --where "STAGES=99" --others $S --iters 20 --deadline 100 --json $R/sweep_$SET.json > $R/sweep_$SET.log 2>&1
  echo "$SET rc=$? $(el) s"; grep -E "geomean $S alone" $R/sweep_$SET.log; save
done
