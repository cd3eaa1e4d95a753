#!/usr/bin/env bash
# Session nov30d, call 1 (any sm_90): two kernel changes of issue 19. (1) The forward split over a thread-block
# cluster (ConvImplicitGemmHopperFwdClusterSplit, CSPLIT = 1): its GPU tests (float64 reference; equal outputs to the
# forward's own split), compute-sanitizer racecheck / memcheck on an M- and N-tail case, then every STAGES = 4 WSPEC
# config of its space beside the Hopper forwards' find configs and cuDNN's plans on the 12 ResNet-50 layers where it
# applies (three interleaved passes). (2) Backward data's 192-wide tiles (session nov30c's prepared patch): test_bn192.py
# (backward cases new), the sanitizer on a strided case, and every BN = 192 config beside the Hopper backward's find
# configs on the two NON_RESNET layers with dx's channels a multiple of 192. FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_SYSTEM_DB=none
timeout 170 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_cluster_split.py \
  tests/implicit_gemm_hopper/test_bn192.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
OUT_SAVE=$OUT
OUT=$R/sanitize1 SANITIZE_TIMEOUT=50 timeout 70 scripts/sanitize --solvers ConvImplicitGemmHopperFwdClusterSplit \
  --every --problems nhwc_cluster_split \
  --config '{"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 0, "SPLITK": 4, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}' \
  > $R/sanitize1.txt 2>&1; echo "sanitize1 rc=$? $(el) s"; tail -3 $R/sanitize1.txt
OUT=$R/sanitize2 SANITIZE_TIMEOUT=50 timeout 70 scripts/sanitize --solvers ConvImplicitGemmHopperBwd --every \
  --problems nhwc_bn192_b_s2 \
  --config '{"BM": 128, "BN": 192, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}' \
  > $R/sanitize2.txt 2>&1; echo "sanitize2 rc=$? $(el) s"; tail -3 $R/sanitize2.txt
OUT=$OUT_SAVE; save
sweep() {   # name, direction, set, solver, where, others, layers, the second of the call by which it stops
  local name=$1 d=$2 s=$3 solver=$4 where=$5 others=$6 layers=$7 until=$8
  local left=$(( until - $(el) ))
  [ $left -lt 30 ] && { echo "skip $name"; return; }
  timeout $left python3 bench/sweep_configs.py --dir $d --set $s --solver $solver --where "$where" --iters 30 --reps 3 \
    --deadline $(( left - 15 )) --layers $layers --others $others --json $R/sweep_$name.json > $R/sweep_$name.txt 2>&1
  echo "sweep $name rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_$name.txt; save
}
sweep b192 B nonresnet ConvImplicitGemmHopperBwd "BN=192" ConvImplicitGemmHopperBwd \
  inc_192to192_17_1x7,inc_192to320_17_3x3s2 300
sweep csplit_r50 F resnet50 ConvImplicitGemmHopperFwdClusterSplit "STAGES=4,WSPEC=1" \
  ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore,ConvImplicitGemmHopperFwdClusterSplit \
  r50_128to128_56_3x3s2,r50_512to128_28_1x1s1,r50_128to128_28_3x3s1,r50_256to256_28_3x3s2,r50_1024to256_14_1x1s1,r50_256to256_14_3x3s1,r50_1024to512_14_1x1s1,r50_512to512_14_3x3s2,r50_512to2048_7_1x1s1,r50_1024to2048_14_1x1s2,r50_2048to512_7_1x1s1,r50_512to512_7_3x3s1 575
gzip -f $R/*.json $R/*.log; save; echo "all $(el) s"
