#!/usr/bin/env bash
# Session nov30a, call 7 (any sm_90; an H200): 256-row ping-pong tiles (PINGPONG = 1, BM = 256: a consumer warpgroup
# multiplies four m64 blocks, WG_M = 4, at most 64 wide), the layout of cuDNN's kernel for Inception's stem (calls 4-5:
# one producer and two consumer warpgroups of 256 x 32 tiles). Their GPU tests (test_pingpong256.py) and the ping-pong
# tests that were there; then sweeps of the persistent 256-row configs (ping-pong or not), every one verified against
# the float64 reference, beside cuDNN's plans: the forward on seven PADDED_C layers (32-deep tiles), backward data on
# four, the forward on ResNet-50's layers (64-deep tiles).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite CUPY_CACHE_DIR=/tmp/cupy7
timeout 150 python3 -m pytest -v -m gpu -n 8 -p no:cacheprovider tests/implicit_gemm_hopper/test_pingpong256.py \
  tests/implicit_gemm_hopper/test_row64.py -k "pingpong256 or walks" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
gzip -f $R/tests.log; save
L=inc_32to32_149_3x3,inc_32to64_147_3x3,inc_80to192_73_3x3,inc_48to64_35_5x5,inc_96to96_35_3x3,mb2_144to32_28_1x1,dense_160to128_28_1x1
timeout 170 python3 bench/sweep_configs.py --dir F --set padded --layers $L --where "BM=256,PERSIST=1,TMA=2,STAGES=4|6|8|10" \
  --deadline 140 --json $R/sweep_f.json > $R/sweep_f.txt 2>&1
echo "sweep F rc=$? $(el) s"; grep -vE "^\s+(ConvImpl|[0-9])" $R/sweep_f.txt | head -5; save
timeout 110 python3 bench/sweep_configs.py --dir B --set padded --layers inc_32to32_149_3x3,inc_48to64_35_5x5,mb2_144to32_28_1x1,inc_96to96_35_3x3 \
  --where "BM=256,PERSIST=1,TMA=2,STAGES=4|6|8" --deadline 90 --json $R/sweep_b.json > $R/sweep_b.txt 2>&1
echo "sweep B rc=$? $(el) s"; save
left=$(( 470 - $(el) ))
[ $left -gt 40 ] && timeout $left python3 bench/sweep_configs.py --dir F --set resnet50 --layers all \
  --where "BM=256,PERSIST=1,TMA=1,STAGES=3|4|5" --deadline $(( left - 20 )) --json $R/sweep_r50.json > $R/sweep_r50.txt 2>&1
echo "sweep r50 rc=$? $(el) s"; save; echo "all $(el) s"
