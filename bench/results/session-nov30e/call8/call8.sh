#!/usr/bin/env bash
# Session nov30e, call 8 (any sm_90), PLAN_next item 2's first measurement: ncu's sections for our Hopper W configs,
# cuBLASLt's GEMM and cuDNN's plan on ResNet-50's 1x1 stride-1 W layers at 14 x 14 and 7 x 7 (w_ncu.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc8 MIOFIND_DB=sqlite:////tmp/u8.sqlite CUPY_CACHE_DIR=/tmp/cupy8 MIOFIND_SYSTEM_DB=none
timeout 250 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
  --section WarpStateStats python3 bench/results/session-nov30e/call8/w_ncu.py > $R/ncu_w.txt 2> $R/ncu_w.err
echo "ncu rc=$? $(el) s"; tail -3 $R/ncu_w.err
awk '/^  [a-zA-Z_]/{k=$1} /Duration|DRAM Throughput  |L2 Cache Throughput|Compute \(SM\) Throughput|Cluster Size|Grid Size|Block Size|Issued Warp Per|Registers Per|Achieved Occupancy/{print k": "$0}' $R/ncu_w.txt \
  | grep -v "cupy\|curand\|init_" > $R/ncu_w_summary.txt; cat $R/ncu_w_summary.txt | head -90
gzip -f $R/ncu_w.txt; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
