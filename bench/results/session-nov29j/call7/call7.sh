#!/usr/bin/env bash
# Session nov29j, call 7 (any sm_90; an H200): backward data with 32-wide tiles (BN = 32 with B_MN, the copy engine's
# 64-byte-swizzled MN-major filter box), for layers of at most 32 of dx's channels.
# 1. GPU tests: test_bn32.py (with its backward-data cases), test_row64.py, test_nchw.py's padded case, the C++ path's
#    Hopper tensor-map cases.
# 2. sweep_configs.py --dir B on PADDED_C's layers of at most 32 of dx's channels: every BN = 32 config (64- and 32-deep),
#    the find's configs (--others; with its 32-wide alternates now) and cuDNN's plans.
# 3. bench_convs.py B over PADDED_C, no system DB (as call 6's "after", now with the 32-wide alternates).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite CUPY_CACHE_DIR=/tmp/cupy7
timeout 120 python3 -m pytest -v -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_bn32.py \
  tests/implicit_gemm_hopper/test_row64.py tests/implicit_gemm_hopper/test_nchw.py -k "bn32 or row64 or c96_k160" \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head -20; tail -1 $R/tests.log
save
MIOFIND_KERNEL_CACHE=/tmp/kc7t MIOFIND_DB=sqlite:////tmp/u7t.sqlite timeout 70 python3 -m pytest -m gpu -v \
  -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" -n 6 > $R/torch.log 2>&1
echo "torch rc=$? $(el) s"; grep -E "FAILED|ERROR" $R/torch.log | head; tail -1 $R/torch.log; save
L=inc_32to32_149_3x3,inc_32to64_147_3x3,mb2_32to16_112_1x1,mb2_16to96_112_1x1,mb2_24to144_56_1x1,mb2_32to192_28_1x1
left=$(( 260 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir B --set padded --layers $L --where "BN=32,STAGES=4|6|8" \
  --others ConvImplicitGemmHopperBwd --iters 20 --deadline $(( left - 10 )) --json $R/sweep_b32.json > $R/sweep_b32.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_b32.txt; save
export MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none
left=$(( 370 - $(el) )); [ $left -lt 50 ] && { echo "skip bench: $left s left"; exit 0; }
timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs B --set padded \
  --out $R/after_B > $R/after_B.txt 2>&1
echo "B rc=$? $(el) s"; grep -E "harness, geometric mean" $R/after_B.txt; save
