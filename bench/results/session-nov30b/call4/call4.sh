#!/usr/bin/env bash
# Session nov30b, call 4 (any sm_90): resident B for backward data too (the MN-major filter tiles of each stride phase,
# PERSIST = 2), and its twins in the backward-data find. GPU tests (test_resident_b.py in full; the narrow-layer
# families' find configs again: test_row64, test_bn32, test_tma_padded), compute-sanitizer on a strided backward-data
# problem with a PERSIST = 2 config, every find config of ConvImplicitGemmHopperBwd beside cuDNN's plans (as call 2 for
# F), then bench_convs.py's same-run side-by-side of B on ResNet-50, PADDED_C and NON_RESNET, FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4
timeout 100 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_resident_b.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
timeout 150 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  tests/implicit_gemm_hopper/test_bn32.py tests/implicit_gemm_hopper/test_tma_padded.py > $R/tests_narrow.log 2>&1
echo "narrow tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_narrow.log; grep -E " FAILED| ERROR" $R/tests_narrow.log | head
tail -1 $R/tests_narrow.log; save
OUT_SAVE=$OUT
OUT=$R/sanitize_b SANITIZE_TIMEOUT=45 timeout 60 scripts/sanitize --solvers ConvImplicitGemmHopperBwd --every \
  --problems nhwc_tma_b_s2 \
  --config '{"BM": 64, "BN": 128, "WGS": 1, "STAGES": 4, "PERSIST": 2, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}' \
  > $R/sanitize_b.txt 2>&1; echo "sanitize_b rc=$? $(el) s"; tail -3 $R/sanitize_b.txt
OUT=$OUT_SAVE; save
for set in padded resnet50 nonresnet; do
  left=$(( 330 - $(el) )); [ $left -lt 30 ] && break
  timeout $left python3 bench/sweep_configs.py --dir B --set $set --layers all --where "BM=999" \
    --others ConvImplicitGemmHopperBwd --iters 20 --deadline $(( left - 10 )) --json $R/find_$set.json > $R/find_$set.txt 2>&1
  echo "sweep $set rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/find_$set.txt; save
done
export MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none
for set in resnet50 padded nonresnet; do
  left=$(( 580 - $(el) )); [ $left -lt 60 ] && { echo "skip $set: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs B --set $set \
    --out $R/samerun > $R/samerun_B_FP16_$set.txt 2>&1
  echo "$set rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_B_FP16_$set.txt; save
done
gzip -f $R/*.log; save; echo "all $(el) s"
