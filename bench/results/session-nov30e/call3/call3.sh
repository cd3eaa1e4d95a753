#!/usr/bin/env bash
# Session nov30e, call 3 (any sm_90): every copy-engine config (TMA = 1) of the Hopper forward's space on ResNet-50's
# memory-bound 1x1 layers at 56 x 56 (FP16 NHWC, N = 32), beside the copy-engine store's find configs and cuDNN's plans,
# two interleaved passes; then ncu's full sections for call 2's picks (f_bw.py --ncu) on those layers.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_SYSTEM_DB=none
timeout 280 python3 bench/sweep_configs.py --dir F --set resnet50 --where "TMA=1" --iters 30 --reps 2 --deadline 260 \
  --layers r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1 \
  --others ConvImplicitGemmHopperFwdTmaStore --json $R/sweep_f56.json > $R/sweep_f56.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline|r50)|^  " $R/sweep_f56.txt | head -40
mkdir -p $R/p2; zcat bench/results/session-nov30e/call2/f_bw.json.gz > $R/p2/f_bw.json
timeout 150 ncu --clock-control none --launch-count 400 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
  python3 bench/results/session-nov30e/call2/f_bw.py $R/p2/f_bw.json --ncu > $R/ncu_full.txt 2> $R/ncu_full.err
echo "ncu rc=$? $(el) s"
gzip -f $R/*.json $R/ncu_full.txt; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
