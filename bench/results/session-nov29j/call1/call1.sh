#!/usr/bin/env bash
# Session nov29j, call 1 (any sm_90; an H200): the Hopper forward's 32-deep 16-bit K tiles (TMA = 2, ROW64).
# 1. tests/implicit_gemm_hopper/test_row64.py on the GPU (every kind against the float64 reference, FP16 and BF16).
# 2. sweep_configs.py over PADDED_C (30 real layers with C % 64 != 0, N = 32, FP16 NHWC): every TMA = 2 config of the
#    space at 4, 6, 8, 10 or 12 stages, the forward's find configs (default and alternates, --others) and cuDNN's plans,
#    one harness a layer, isolated and graph times.
# 3. compute-sanitizer racecheck and memcheck of the forward with a TMA = 2 config on two walking tiny problems.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; tail -1 $R/tests.log; save
left=$(( 480 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir F --set padded --layers all --where "TMA=2,STAGES=4|6|8|10|12" \
  --others ConvImplicitGemmHopperFwd --iters 20 --deadline $(( left - 15 )) --json $R/sweep.json > $R/sweep.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep.txt; save
left=$(( 585 - $(el) )); [ $left -lt 40 ] && { echo "skip sanitize: $left s left"; exit 0; }
OUT_SAVE=$OUT; OUT=$R/sanitize SANITIZE_TIMEOUT=$(( left - 25 )) timeout $left scripts/sanitize \
  --solvers ConvImplicitGemmHopperFwd --every --problems nhwc_c48_walk,nhwc_pad_walk \
  --config '{"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}' \
  > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s"; tail -3 $R/sanitize.txt
OUT=$OUT_SAVE; save
