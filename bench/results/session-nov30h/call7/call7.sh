#!/usr/bin/env bash
# Session nov30h, call 7 (any sm_90): ncu's speed-of-light, occupancy and warp-state sections (and the wgmma pipe's
# activity where ncu names such a metric) for the Hopper W kernel at call 4's tuned configs on ResNet-50's narrow and
# wide 3x3 W layers (w3x3_ncu.py): PLAN_next item 2's profile before any kernel change.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
D=bench/results/session-nov30h/call7
export CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u7x.sqlite
ncu --query-metrics --chip gh100 > $R/metrics.txt 2>&1
G=$(grep -o "^sm__pipe_tensor_op_gmma_cycles_active" $R/metrics.txt | head -1)
X=""; [ -n "$G" ] && X="--metrics $G.avg.pct_of_peak_sustained_active"
echo "gmma metric: ${G:-none} $(el) s"
timeout 200 ncu --clock-control none -k regex:igemm_hopper_wrw --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section LaunchStats $X --csv python3 $D/w3x3_ncu.py > $R/ncu.csv 2> $R/ncu.err
echo "ncu rc=$? $(el) s"; tail -2 $R/ncu.err
python3 - $R/ncu.csv <<'PY' | tee $R/ncu_summary.txt
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(r for r in rows if r and r[0] == "ID")
ik, im, iv = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
want = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput", "L2 Cache Throughput",
        "Achieved Occupancy", "Registers Per Thread", "Grid Size", "Block Size", "Warp Cycles Per Issued Instruction",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active")
cur = {}
for r in rows:
    if len(r) > iv and r[0].isdigit():
        cur.setdefault((int(r[0]), r[ik][:28]), {})[r[im]] = r[iv]
for (i, k), m in sorted(cur.items()):
    print(i, k, " | ".join(f"{w.split('.')[0][-22:]}={m[w]}" for w in want if w in m))
PY
grep -E "^r50" $R/ncu.csv | head; grep -E "GFLOP" $R/ncu.csv $R/ncu.err | head
gzip -f $R/ncu.csv; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
