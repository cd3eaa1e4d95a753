#!/usr/bin/env bash
# Session nov29h, call 2 (any sm_90; an H200): the padded copy-engine K tiles as the forward's default where C >= 96 is
# padded by at most a third (hb.padded_default, from call 1's figures).
# 1. GPU tests: test_tma_padded.py (call 1's failed case's problem enlarged), the copy-engine F tests of test_tma.py,
#    the tiered finds.
# 2. compute-sanitizer racecheck and memcheck on the padded tiny problems (the forward and the copy-engine store).
# 3. Same run (bench/bench_convs.py --cudnn-harness: every own solver and cuDNN plan in one benchmark find a problem,
#    MIOFIND_SPECIALIZE=sync, empty user DB): tests/shapes.py's PADDED_C and NON_RESNET, FP16 NHWC F, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2
timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_tma.py tests/core/test_tiered_gpu.py -k "padded or fwd or tiered" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; save
OUT_SAVE=$OUT; OUT=$R/sanitize SANITIZE_TIMEOUT=80 timeout 150 scripts/sanitize \
  --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore --every --problems nhwc_pad_walk,nhwc_pad_1x1 \
  > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s"; tail -3 $R/sanitize.txt; OUT=$OUT_SAVE; save
export MIOFIND_SPECIALIZE=sync
for set in padded nonresnet; do
  left=$(( 570 - $(el) )); [ $left -lt 40 ] && { echo "skip $set: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F --set $set \
    --out $R/samerun > $R/samerun_F_FP16_$set.txt 2>&1
  echo "$set rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F_FP16_$set.txt; save
done
