#!/usr/bin/env bash
# Session nov30b, call 7 (any sm_90; the session's last 260 s of device time): test_resident_b.py in full, with the TF32
# backward data (flipped filter, K-major, resident) and the NCHW backward data's twins added; then, as time allows, a
# sweep of TF32 PERSIST = 1 and 2 configs on ResNet-50's forward layers where PERSIST = 2 applies (FP32, math tf32).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite CUPY_CACHE_DIR=/tmp/cupy7
timeout 70 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_resident_b.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
left=$(( 140 - $(el) ))
[ $left -gt 25 ] && timeout $left python3 bench/sweep_configs.py --dir F --dtype FP32 --math tf32 --set resnet50 \
  --where "PERSIST=1|2,TMA=1,PINGPONG=0,WSPEC=1,STAGES=3|4" --iters 20 --deadline $(( left - 8 )) \
  --layers r50_64to64_56_1x1s1,r50_64to64_56_3x3s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1 \
  --json $R/sweep_tf32.json > $R/sweep_tf32.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_tf32.txt
gzip -f $R/*.log; save; echo "all $(el) s"
