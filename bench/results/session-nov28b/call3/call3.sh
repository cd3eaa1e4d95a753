#!/usr/bin/env bash
# Session nov28b, call 3 (H100): (1) compute-sanitizer (memcheck, racecheck) on the Hopper forward and fused forward over
# every tiny problem they claim (bench/sanitize_driver.py --every: the FP16 ones and the new TF32 ones: cp.async
# loads, the persistent copy engine walking tiles, a fused epilogue split over the reduction), at their default configs,
# then at the ping-pong TF32 alternate where valid; (2) ResNet-50's N=32 NHWC FP32 problems with TF32 math added to the
# shipped DB (scripts/build-finddb, FINDDB_GROUPS=resnet50:32:tf32:NHWC: a find of every applicable solver, default and
# alternate configs), and their ratios (tf32_nhwc_ratios.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache SANITIZE_TIMEOUT=100
H=bench/results/session-nov28b/call3
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
OUT=$R/san_default scripts/sanitize --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdBiasActiv --every 2>&1 | tail -4
echo "sanitize default $(el) s"; save
OUT=$R/san_pp scripts/sanitize --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdBiasActiv --every \
  --config '{"BM":64,"BN":128,"WGS":2,"STAGES":6,"PERSIST":1,"SPLITK":1,"WSPEC":1,"TMA":1,"PINGPONG":1}' 2>&1 | tail -4
echo "sanitize ping-pong $(el) s"; save
left=$(( 560 - $(el) ))
OUT=$R/build FINDDB_GROUPS="resnet50:32:tf32:NHWC" timeout $(( left + 20 )) scripts/build-finddb $left finddb/sm_90-132.sqlite \
  > $R/build.log 2>&1
echo "build rc=$? $(el) s"; tail -n 3 $R/build.log | cut -c1-300
DB=/tmp/miofind-ship/sm_90-132.sqlite
python3 $H/tf32_nhwc_ratios.py $DB | tee $R/ratios.txt
gzip -c $DB > $R/db.sqlite.gz
save
