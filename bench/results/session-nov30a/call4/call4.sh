#!/usr/bin/env bash
# Session nov30a, call 4 (any sm_90; an H200): session nov29j's PLAN_next item 2, the Inception 32 -> 32 3x3 stem
# (N = 32, FP16 NHWC; bench/hopper_wrw_profile.py's problem, pad 1: 149 x 149 out), where our best 32-deep config
# (256 x 32, 6 stages, persistent, TMA = 2) takes 69.8 us against cuDNN's 63.9 (nov29j call 6). ncu with warp stall
# reasons (WarpStateStats, SchedulerStats) of that config, of its 64-wide twin (256 x 64, 8 stages) and of cuDNN's
# heuristic plan (filtered to its own kernels, as nov29i's call 6).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4
P="python3 bench/hopper_wrw_profile.py F 32 32 149 3 1 32"
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis"
NCU="ncu --clock-control none --csv --page details"
C32='{"BM": 256, "BN": 32, "WGS": 2, "STAGES": 6, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}'
C64='{"BM": 256, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}'
timeout 150 $NCU $SEC -k regex:igemm_hopper_fwd --launch-skip 2 --launch-count 1 $P "$C32" > $R/ncu_row64_bn32.csv 2> $R/ncu_row64_bn32.err
echo "1 rc=$? $(el) s"; save
timeout 120 $NCU $SEC -k regex:igemm_hopper_fwd --launch-skip 2 --launch-count 1 $P "$C64" > $R/ncu_row64_bn64.csv 2> $R/ncu_row64_bn64.err
echo "2 rc=$? $(el) s"; save
timeout 200 $NCU $SEC -k 'regex:^(?!cupy|void execute_dist|miofind|spin|hold).*' --launch-count 6 $P --solver ConvCudnnFwd \
  > $R/ncu_cudnn.csv 2> $R/ncu_cudnn.err
echo "3 rc=$? $(el) s"; save
python3 - <<'PY' > $R/summary.txt
import csv, glob
want = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "L2 Cache Throughput", "DRAM Throughput",
        "Issue Slots Busy", "Achieved Occupancy", "Registers Per Thread", "Block Size", "Grid Size",
        "Dynamic Shared Memory Per Block", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Executed Ipc Active")
for f in sorted(glob.glob("/tmp/r/ncu_*.csv")):
    rows = [r for r in csv.reader(open(f)) if len(r) > 14]
    if not rows: print(f, "no rows"); continue
    h = rows[0]; ki, mi, ui, vi = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Unit"), h.index("Metric Value")
    print("==", f.split("/")[-1])
    seen = set()
    for r in rows[1:]:
        if r[mi] in want:
            print(f"  {r[ki][:60]:60s} {r[mi]:40s} {r[vi]} {r[ui]}")
PY
cat $R/summary.txt | head -80; save; echo "all $(el) s"
