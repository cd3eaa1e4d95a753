#!/usr/bin/env bash
# Session nov29j, call 4 (any sm_90; an H200): backward data with 32-deep K tiles over dy's channels (TMA = 2, B_MN).
# 1. GPU tests: test_row64.py (F and B), test_nchw.py's padded case (its find configs now with the 32-deep ones, F and
#    B), miofind.torch's C++ path with the Hopper tensor maps (three TMA = 2 recipes, one of backward data).
# 2. sweep_configs.py --dir B over PADDED_C (FP16 NHWC N = 32; layers with dy's K % 64 != 0 have TMA = 2 configs):
#    every TMA = 2 config at 4-12 stages, the backward-data find's configs (--others) and cuDNN's plans.
# 3. compute-sanitizer racecheck and memcheck of backward data with a TMA = 2 config on walking tiny problems (four
#    stride phases; 40 of dy's channels: padded 32-deep taps).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4
timeout 200 python3 -m pytest -v -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  tests/implicit_gemm_hopper/test_nchw.py -k "test_row64 or c96_k160 or bwd_row64 or fwd_row64" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head -20; tail -1 $R/tests.log
save
MIOFIND_KERNEL_CACHE=/tmp/kc4t MIOFIND_DB=sqlite:////tmp/u4t.sqlite timeout 90 python3 -m pytest -m gpu -v \
  -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" -n 6 > $R/torch.log 2>&1
echo "torch rc=$? $(el) s"; grep -E "FAILED|ERROR" $R/torch.log | head; tail -1 $R/torch.log; save
left=$(( 480 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir B --set padded --layers all --where "TMA=2,STAGES=4|6|8|10|12" \
  --others ConvImplicitGemmHopperBwd --iters 20 --deadline $(( left - 15 )) --json $R/sweep_b.json > $R/sweep_b.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_b.txt; save
left=$(( 585 - $(el) )); [ $left -lt 40 ] && { echo "skip sanitize: $left s left"; exit 0; }
OUT_SAVE=$OUT; OUT=$R/sanitize SANITIZE_TIMEOUT=$(( left - 25 )) timeout $left scripts/sanitize \
  --solvers ConvImplicitGemmHopperBwd --every --problems nhwc_c48_walk,nhwc_tma_b_s2 \
  --config '{"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}' \
  > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s"; tail -3 $R/sanitize.txt
OUT=$OUT_SAVE; save
