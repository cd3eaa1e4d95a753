#!/usr/bin/env bash
# Session nov29i, call 5 (any sm_90; an H200): why the Hopper forward loses on Inception's 32 -> 32 3x3 @149 (N = 32,
# FP16 NHWC; call 1: cp.async default 108 us, padded copy-engine best 165 us, cuDNN 64 us): ncu of the cp.async default,
# the padded copy-engine config (256 x 64 persistent, 4 stages) and cuDNN's heuristic plan, on bench/hopper_wrw_profile.py's
# problem (pad 1: 149 x 149 out).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5
P="python3 bench/hopper_wrw_profile.py F 32 32 149 3 1 32"
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis"
NCU="ncu --clock-control none --csv --page details"
C1='{"BM": 128, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 0, "SPLITK": 1, "WSPEC": 0, "TMA": 0, "PINGPONG": 0}'
C2='{"BM": 256, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}'
timeout 120 $NCU $SEC -k regex:igemm_hopper_fwd --launch-skip 2 --launch-count 1 $P "$C1" > $R/ncu_cpasync.csv 2> $R/ncu_cpasync.err
echo "1 rc=$? $(el) s"; save
timeout 120 $NCU $SEC -k regex:igemm_hopper_fwd --launch-skip 2 --launch-count 1 $P "$C2" > $R/ncu_padded.csv 2> $R/ncu_padded.err
echo "2 rc=$? $(el) s"; save
timeout 150 $NCU $SEC --launch-skip 4 --launch-count 8 $P --solver ConvCudnnFwd > $R/ncu_cudnn.csv 2> $R/ncu_cudnn.err
echo "3 rc=$? $(el) s"; save; echo "all $(el) s"
# (call 6 ran cuDNN's again with a kernel filter: the launches above caught CuPy's input generation only)
