#!/usr/bin/env bash
# Session nov30c, call 4 (any sm_90): the forward's filter tiles multicast in clusters of two (PERSIST = 3, the kernel's
# B_MC). Its GPU tests (test_multicast_b.py) with test_bn192.py and test_resident_b.py (their find lists changed), then
# compute-sanitizer racecheck and memcheck of two PERSIST = 3 configs on walks of an odd count of M tiles (64 channels
# on 64-deep tiles, 48 on padded 32-deep ones); stops there if either fails. Then every PERSIST = 3 config at 4, 6 or 8
# stages beside the forward's find configs (now with the multicast twins), the copy-engine store's and cuDNN's plans
# on ResNet-50's layers, three interleaved passes; then bench_convs --cudnn-harness F on ResNet-50, NON_RESNET and
# PADDED_C (no system DB). FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_SYSTEM_DB=none
timeout 200 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_multicast_b.py \
  tests/implicit_gemm_hopper/test_bn192.py tests/implicit_gemm_hopper/test_resident_b.py > $R/tests.log 2>&1
trc=$?
echo "tests rc=$trc $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
OUT_SAVE=$OUT
OUT=$R/sanitize1 SANITIZE_TIMEOUT=50 timeout 75 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every \
  --problems nhwc_mc_walk \
  --config '{"BM": 128, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 3, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}' \
  > $R/sanitize1.txt 2>&1; s1=$?; echo "sanitize1 rc=$s1 $(el) s"; tail -3 $R/sanitize1.txt
OUT=$R/sanitize2 SANITIZE_TIMEOUT=50 timeout 75 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every \
  --problems nhwc_mc_c48_walk \
  --config '{"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 3, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}' \
  > $R/sanitize2.txt 2>&1; s2=$?; echo "sanitize2 rc=$s2 $(el) s"; tail -3 $R/sanitize2.txt
OUT=$OUT_SAVE; save
if [ $trc -ne 0 ] || [ $s1 -ne 0 ] || [ $s2 -ne 0 ]; then gzip -f $R/*.log; save; echo "stopped: a check failed"; exit 1; fi
left=$(( 330 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir F --set resnet50 --where "PERSIST=3,STAGES=4|6|8" --iters 30 --reps 3 \
  --deadline $(( left - 15 )) --layers all --others ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore \
  --json $R/sweep_resnet50.json > $R/sweep_resnet50.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_resnet50.txt; save
export MIOFIND_SPECIALIZE=sync
for run in "FP16 resnet50" "FP16 nonresnet" "FP16 padded"; do
  set -- $run
  left=$(( 580 - $(el) )); [ $left -lt 60 ] && { echo "skip $run: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs F --set $2 \
    --out $R/samerun > $R/samerun_F_$1_$2.txt 2>&1
  echo "$run rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_F_$1_$2.txt; save
done
gzip -f $R/*.json $R/*.log; save; echo "all $(el) s"
