#!/usr/bin/env bash
# Session nov30g, call 7 (any sm_90): why does the Hopper W kernel take 22.7 us on ResNet-50's 512 -> 1024 @28 1x1/2
# (tuned, split 4) when the same tile work (128 x 128 tiles, 1568-deep reduction, 128 blocks) on 1024 -> 2048 @14 1x1/2
# takes 13.3 us (unsplit)? Every 128 x 128 two-warpgroup config of the space at 4-6 stages on both layers, beside cuDNN's
# plans and the GEMM solvers at their find configs, isolated and back to back.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite MIOFIND_SYSTEM_DB=none
timeout 520 python3 bench/sweep_configs.py --dir W --layers r50_512to1024_28_1x1s2,r50_1024to2048_14_1x1s2 \
  --where "BM=128,BN=128,WGS=2,STAGES=4|5|6,TMA=1" --others GemmWrwUniversal --json $R/sweep.json > $R/sweep.txt 2>&1
echo "sweep rc=$? $(el) s"; tail -40 $R/sweep.txt | cut -c1-250
gzip -f $R/sweep.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
