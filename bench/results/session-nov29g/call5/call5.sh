#!/usr/bin/env bash
# Session nov29g call 5: why every W of ResNet-50's 256 -> 64 @56 1x1 layer (N=32 FP16 NHWC: dy 12.8 MB + x 51.4 MB,
# 17 us at call 4's 3.94 TB/s read rate) takes ~22.5 us: ncu (clock control off) of the Hopper W kernel at call 4's
# best config (64 x 64, SPLITK 33, 6 stages) and at one whole-C tile (64 x 256, SPLITK 131, 4 stages), of the
# cuBLASLt GEMM solver's and cuDNN's kernels on the same problem, and of call 4's bandwidth probe.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u5.sqlite
P="python3 bench/hopper_wrw_profile.py W 256 64 56 1 1 32"
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
NCU="ncu --clock-control none --csv --page details"
C1='{"BM": 64, "BN": 64, "WGS": 1, "STAGES": 6, "SPLITK": 33, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 0}'
C2='{"BM": 64, "BN": 256, "WGS": 1, "STAGES": 4, "SPLITK": 131, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 0}'
timeout 120 $NCU $SEC -k regex:igemm_hopper_wrw --launch-skip 2 --launch-count 2 $P "$C1" > $R/ncu_hopper_64x64.csv 2> $R/ncu_hopper_64x64.err
echo "1 rc=$? $(el) s"; save
timeout 120 $NCU $SEC -k regex:igemm_hopper_wrw --launch-skip 2 --launch-count 2 $P "$C2" > $R/ncu_hopper_64x256.csv 2> $R/ncu_hopper_64x256.err
echo "2 rc=$? $(el) s"; save
timeout 120 $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis --launch-skip 4 --launch-count 12 $P --solver GemmWrw1x1_stride1 > $R/ncu_gemm.csv 2> $R/ncu_gemm.err
echo "3 rc=$? $(el) s"; save
timeout 150 $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis --launch-skip 4 --launch-count 12 $P --solver ConvCudnnWrw > $R/ncu_cudnn.csv 2> $R/ncu_cudnn.err
echo "4 rc=$? $(el) s"; save
timeout 90 $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:^rd$ --launch-skip 1 --launch-count 1 python3 bench/results/session-nov29g/call4/bw_probe.py > $R/ncu_probe.csv 2> $R/ncu_probe.err
echo "5 rc=$? $(el) s"; save; echo "all $(el) s"
