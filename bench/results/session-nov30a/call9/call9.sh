#!/usr/bin/env bash
# Session nov30a, call 9 (any sm_90; an H200): the copy-engine store (ConvImplicitGemmHopperFwdTmaStore) for 32-deep K
# tiles (TMA = 2) and 32-wide tiles (one output box of 64-byte rows), after call 8 measured the forward's epilogue
# stores at 8-13 us of the stems' 70-80. GPU tests (test_tma_store.py's 32-deep cases and find configs, the C++ path's
# tensor-map recipes); a sweep of the store's 32-deep configs beside the forward's find configs and cuDNN's plans on
# seven PADDED_C layers; then bench_convs.py on PADDED_C's forward (what a find picks; no system DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_DB=sqlite:////tmp/u9.sqlite CUPY_CACHE_DIR=/tmp/cupy9
timeout 130 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_store.py \
  -k "row64 or find_configs" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
L=inc_32to32_149_3x3,inc_32to64_147_3x3,inc_80to192_73_3x3,inc_48to64_35_5x5,inc_96to96_35_3x3,mb2_144to32_28_1x1,dense_160to128_28_1x1
timeout 120 python3 bench/sweep_configs.py --dir F --set padded --solver ConvImplicitGemmHopperFwdTmaStore --layers $L \
  --where "TMA=2,STAGES=4|6|8,WGS=2" --others ConvImplicitGemmHopperFwd --deadline 100 --json $R/sweep.json > $R/sweep.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^[a-z]|geomean" $R/sweep.txt | head -20; save
timeout 100 python3 -m pytest -v -m gpu -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" > $R/tests_cpp.log 2>&1
echo "cpp tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_cpp.log; grep -E " FAILED| ERROR" $R/tests_cpp.log | head; tail -1 $R/tests_cpp.log
save
left=$(( 330 - $(el) ))
if [ $left -gt 60 ]; then
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC \
    --cudnn-harness --dirs F --set padded --out $R/padded_F > $R/padded_F.txt 2>&1
  echo "bench_convs rc=$? $(el) s"; grep -E "harness, geometric mean" $R/padded_F.txt
fi
gzip -f $R/*.log; save; echo "all $(el) s"
