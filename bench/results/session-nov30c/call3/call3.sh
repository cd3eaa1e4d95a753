#!/usr/bin/env bash
# Session nov30c, call 3 (any sm_90): the 192-wide tiles in the copy-engine store too. test_bn192.py (the store's cases
# new); every BN = 192 config of the store's space beside the forward's and the store's find configs and cuDNN's plans
# on the 10 layers whose N is a multiple of 192 (three interleaved passes); then the same-run side-by-side of the
# forward (bench_convs --cudnn-harness, no system DB, every find on the GPU): FP16 PADDED_C and NON_RESNET, BF16
# PADDED_C, as session nov30b's call 3. FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_SYSTEM_DB=none
timeout 150 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_bn192.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
sweep() {   # set, its layers, the second of the call by which it stops
  local s=$1 layers=$2 until=$3
  local left=$(( until - $(el) ))
  [ $left -lt 30 ] && { echo "skip $s"; return; }
  timeout $left python3 bench/sweep_configs.py --dir F --set $s --solver ConvImplicitGemmHopperFwdTmaStore \
    --where "BN=192" --iters 30 --reps 3 --deadline $(( left - 15 )) --layers $layers \
    --others ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore --json $R/sweep_$s.json > $R/sweep_$s.txt 2>&1
  echo "sweep $s rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_$s.txt; save
}
sweep nonresnet inc_128to192_17_7x1,inc_192to192_17_1x7,inc_288to384_35_3x3s2,inc_448to384_8_3x3 200
sweep padded inc_80to192_73_3x3,inc_160to192_17_7x1,inc_160to192_17_1x7,mb2_32to192_28_1x1,mb2_96to576_14_1x1,mb2_160to960_7_1x1 290
export MIOFIND_SPECIALIZE=sync
for run in "FP16 padded" "FP16 nonresnet" "BF16 padded"; do
  set -- $run
  left=$(( 575 - $(el) )); [ $left -lt 60 ] && { echo "skip $run: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs F --set $2 \
    --out $R/samerun > $R/samerun_F_$1_$2.txt 2>&1
  echo "$run rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_F_$1_$2.txt; save
done
gzip -f $R/*.json $R/*.log; save; echo "all $(el) s"
