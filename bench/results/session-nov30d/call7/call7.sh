#!/usr/bin/env bash
# Session nov30d, call 7 (any sm_90), for PLAN_next.md item 2: every persistent copy-engine config (PERSIST = 1,
# TMA = 1, 4 or 6 stages) of the Hopper forward on ResNet-50's five small-grid 1x1 layers at 14 x 14 and 7 x 7, beside
# both Hopper forwards' find configs and cuDNN's plans, three interleaved passes. FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_SYSTEM_DB=none
timeout 140 python3 bench/sweep_configs.py --dir F --set resnet50 --where "PERSIST=1,TMA=1,STAGES=4|6" --iters 30 \
  --reps 3 --deadline 125 --layers r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1,r50_2048to512_7_1x1s1 \
  --others ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore --json $R/sweep_small1x1.json > $R/sweep_small1x1.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_small1x1.txt
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
