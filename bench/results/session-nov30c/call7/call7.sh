#!/usr/bin/env bash
# Session nov30c, call 7 (any sm_90): call 4's sweep again after call 6's mend (the remote arrivals): every PERSIST = 3
# config at 4, 6 or 8 stages beside the forward's find configs (with the multicast twins), the copy-engine store's and
# cuDNN's plans on ResNet-50's layers, three interleaved passes (call4/mc.py reads it). FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite CUPY_CACHE_DIR=/tmp/cupy7 MIOFIND_SYSTEM_DB=none
timeout 250 python3 bench/sweep_configs.py --dir F --set resnet50 --where "PERSIST=3,STAGES=4|6|8" --iters 30 --reps 3 \
  --deadline 235 --layers all --others ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore \
  --json $R/sweep_resnet50.json > $R/sweep_resnet50.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_resnet50.txt
gzip -f $R/*.json; save; echo "all $(el) s"
