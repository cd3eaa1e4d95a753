#!/usr/bin/env bash
# Prepared (session nov29c; its device time was spent). Any sm_90, about 5 minutes. Issue 19: call 4 found ResNet-50's
# FP16 W losing to cuDNN only on its 1x1 stride-1 layers (9 of 23 over 1.0, 1.01-1.28). Does any config of today's
# Hopper W space beat cuDNN's best plan there, and by how much do the GEMM W solver and the split-K reduce matter?
# bench/sweep_configs.py: every config of ConvImplicitGemmHopperWrw's space on those layers (verified, isolated and back
# to back in a graph), beside every cuDNN plan and the GEMM W solver at its find configs and its shipped record's
# config, one Harness per layer.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc-sweep MIOFIND_DB=sqlite:////tmp/sweep.sqlite
L=r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1
L=$L,r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1
timeout 420 python3 bench/sweep_configs.py --dir W --layers $L --others GemmWrw1x1_stride1 \
  --db finddb/sm_90-132.sqlite --deadline 360 --json $R/sweep_w1x1.json > $R/sweep_w1x1.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; tail -25 $R/sweep_w1x1.log
gzip -f $R/*.log; tar czf $OUT/r.tgz -C /tmp r
