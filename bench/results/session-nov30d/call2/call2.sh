#!/usr/bin/env bash
# Session nov30d, call 2 (any sm_90): (1) why the cluster split's time grew with SPLITK in call 1: the same tiles as
# the forward's unsplit and workspace-split configs and as the cluster split (cs_probe.py), then Nsight Compute on three
# configs of 1024 -> 512 @14 (the forward unsplit and split in four, the cluster split in four). (2) The same-run
# side-by-side of backward data with its 192-wide twins (bench_convs --cudnn-harness, no system DB): FP16 NON_RESNET.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_SYSTEM_DB=none
P=bench/results/session-nov30d/call2/cs_probe.py
timeout 150 python3 $P > $R/cs_probe.txt 2>&1; echo "probe rc=$? $(el) s"; cat $R/cs_probe.txt; save
timeout 150 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats \
  --section Occupancy --section SchedulerStats -k "regex:igemm_hopper_fwd$" python3 $P --ncu > $R/ncu.txt 2>&1
echo "ncu rc=$? $(el) s"; grep -E "igemm_hopper_fwd|Duration|Compute \(SM\) Thro|Cluster|Active Clusters|No Eligible|Stall|Waves|Block Limit|Achieved Occ" $R/ncu.txt | head -60; save
export MIOFIND_SPECIALIZE=sync
left=$(( 560 - $(el) ))
timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs B --set nonresnet \
  --out $R/samerun > $R/samerun_B_FP16_nonresnet.txt 2>&1
echo "bench B rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_B_FP16_nonresnet.txt; save
gzip -f $R/*.log 2>/dev/null; save; echo "all $(el) s"
