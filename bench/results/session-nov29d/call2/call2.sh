#!/usr/bin/env bash
# Session nov29d, call 2 (any sm_90): issue 19's W on ResNet-50's 1x1 stride-1 layers, FP16 NHWC N=32. Call 1 showed
# cuDNN running cuBLASLt's nvjet split-K GEMMs there ("..._splitK_NTT" + splitKreduce). (1) lt_orient.py: the
# heuristic's first 8 algorithms for GemmWrw1x1's NHWC GEMM as it is (O0) and with dW in row order (O1), each timed
# beside cuDNN through torch. (2) sweep_configs.py: every config of GemmWrw1x1_stride1 (LT x SK x RED) on those layers
# in our harness beside every cuDNN plan and the Hopper W solver's find and shipped-DB configs.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite
timeout 200 python3 bench/results/session-nov29d/call2/lt_orient.py $R/lt_orient.json > $R/lt_orient.txt 2>&1
echo "lt_orient rc=$? $(( $(date +%s) - T0 )) s"
L=r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1
L=$L,r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1
timeout 300 python3 bench/sweep_configs.py --dir W --solver GemmWrw1x1_stride1 --layers $L \
  --others ConvImplicitGemmHopperWrw --db finddb/sm_90-132.sqlite --deadline 240 --json $R/sweep_gemm.json \
  > $R/sweep_gemm.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"
grep -v "^  *O[01] place" $R/lt_orient.txt | cut -c1-200; grep -E "O[01] place 0" $R/lt_orient.txt | cut -c1-120
grep -vE "^ {4}" $R/sweep_gemm.log | tail -30
tar czf $OUT/r.tgz -C /tmp r
