#!/usr/bin/env bash
# Session nov28b, call 1 (issue 19): the Hopper forward's TF32 build (IS_TF32: FP32 data, m64nNk8 TF32 wgmma, 32-deep
# K tiles). (1) its GPU tests (tests/implicit_gemm_hopper/test_tf32.py: tails, sampled configs of every kind, the find's
# configs, the fused epilogue, split-K with odd chunk counts, against the float64 reference); (2) the large layer
# (N=120, 64 -> 64, 512 x 512, 3x3, FP16) over every persistent copy-engine config, ping-pong included, beside cuDNN;
# (3) ResNet-50's N=32 NHWC FP32 layers with TF32 math: the Hopper TF32 configs (default and persistent copy-engine
# ones) beside cuDNN's TF32 plans and the Ampere implicit GEMM's TF32 build, same buffers; (4) with the time left, the
# 16-bit F/B GPU tests of the family (the kernel source changed; its 16-bit builds should be the same machine code).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 200 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  tests/implicit_gemm_hopper/test_tf32.py > $R/tests_tf32.log 2>&1
echo "tf32 tests rc=$? $(el) s: $(tail -n 1 $R/tests_tf32.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests_tf32.log | cut -c1-300 | head; save
timeout 150 python3 bench/sweep_configs.py --dir F --set large --layers all --where TMA=1,PERSIST=1 --iters 20 \
  --json $R/large.json > $R/large.log 2>&1
echo "large rc=$? $(el) s"; grep -A6 "^large" $R/large.log | cut -c1-200; save
timeout 170 python3 bench/sweep_configs.py --dir F --dtype FP32 --math tf32 --layers all --where TMA=1,PERSIST=1 \
  --others ConvImplicitGemmFwd --iters 20 --deadline 160 --json $R/tf32.json > $R/tf32.log 2>&1
echo "tf32 sweep rc=$? $(el) s"; grep -E "^geomean" $R/tf32.log; save
left=$(( 585 - $(el) ))
[ $left -gt 40 ] && MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout $left python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider \
  -p no:benchmark tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py tests/implicit_gemm_hopper/test_fused_epilogue.py \
  -k "not wrw and not three" > $R/tests_16bit.log 2>&1
echo "16-bit F/B tests rc=$? $(el) s: $(tail -n 1 $R/tests_16bit.log)"; grep -E "^(FAILED|ERROR)" $R/tests_16bit.log | cut -c1-300 | head
save
