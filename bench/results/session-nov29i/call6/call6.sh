#!/usr/bin/env bash
# Session nov29i, call 6 (an H200): call 5's cuDNN profile again, its kernels only (CuPy's own kernels excluded by name).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite CUPY_CACHE_DIR=/tmp/cupy6
P="python3 bench/hopper_wrw_profile.py F 32 32 149 3 1 32"
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis"
timeout 200 ncu --clock-control none --csv --page details $SEC -k 'regex:^(?!cupy|void execute_dist|miofind|spin|hold).*' \
  --launch-count 12 $P --solver ConvCudnnFwd > $R/ncu_cudnn.csv 2> $R/ncu_cudnn.err
echo "rc=$? $(el) s"; tar czf $OUT/r.tgz -C /tmp r
