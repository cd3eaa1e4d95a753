#!/usr/bin/env bash
# Session nov30c, call 2 (any sm_90): the forward's 192-wide tiles (BN = 192, m64n192k16). Their GPU tests
# (test_bn192.py), compute-sanitizer racecheck and memcheck of two BN = 192 configs (a persistent walk over padded taps
# on 32-deep tiles, a split), then every BN = 192 config of the space beside the forward's find configs (today's,
# with the 192-wide twins), the copy-engine store's and cuDNN's plans, three interleaved passes, on the 11 layers of
# NON_RESNET and PADDED_C whose N is a multiple of 192. FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_SYSTEM_DB=none
timeout 170 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_bn192.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
OUT_SAVE=$OUT
OUT=$R/sanitize1 SANITIZE_TIMEOUT=50 timeout 70 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every \
  --problems nhwc_bn192_walk \
  --config '{"BM": 128, "BN": 192, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}' \
  > $R/sanitize1.txt 2>&1; echo "sanitize1 rc=$? $(el) s"; tail -3 $R/sanitize1.txt
OUT=$R/sanitize2 SANITIZE_TIMEOUT=40 timeout 60 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every \
  --problems nhwc_bn192_split \
  --config '{"BM": 64, "BN": 192, "WGS": 1, "STAGES": 4, "PERSIST": 0, "SPLITK": 3, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}' \
  > $R/sanitize2.txt 2>&1; echo "sanitize2 rc=$? $(el) s"; tail -3 $R/sanitize2.txt
OUT=$OUT_SAVE; save
sweep() {   # set, its layers, the second of the call by which it stops
  local s=$1 layers=$2 until=$3
  local left=$(( until - $(el) ))
  [ $left -lt 30 ] && { echo "skip $s"; return; }
  timeout $left python3 bench/sweep_configs.py --dir F --set $s --where "BN=192" --iters 30 --reps 3 \
    --deadline $(( left - 15 )) --layers $layers --others ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore \
    --json $R/sweep_$s.json > $R/sweep_$s.txt 2>&1
  echo "sweep $s rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_$s.txt; save
}
sweep nonresnet inc_128to192_17_7x1,inc_192to192_17_1x7,inc_288to384_35_3x3s2,inc_448to384_8_3x3 420
sweep padded inc_80to192_73_3x3,inc_160to192_17_7x1,inc_160to192_17_1x7,mb2_32to192_28_1x1,mb2_96to576_14_1x1,mb2_160to960_7_1x1 570
gzip -f $R/*.json $R/*.log; save; echo "all $(el) s"
