#!/usr/bin/env bash
# Session nov27l, call 5 (the machine of call 4, warm): isolated kernel time of the Hopper F, B and W solvers at their
# find configs and at the config of their record in the new shipped DB (--others, --db; --where matches no config of the
# space, so only the default is swept besides), against cuDNN's plans on the same buffers, ResNet-50 N=32 FP16 NHWC.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r5; rm -rf $R; mkdir -p $R
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r5; }
for d in W F B; do
  case $d in W) S=ConvImplicitGemmHopperWrw;; F) S=ConvImplicitGemmHopperFwd;; B) S=ConvImplicitGemmHopperBwd;; esac
  timeout 110 python3 bench/sweep_configs.py --dir $d --layers all --where "WGS=99" --others $S \
    --db finddb/sm_90-132.sqlite --iters 30 --deadline 95 --json $R/kt_$d.json > $R/kt_$d.log 2>&1
  echo "$d rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean .* (alone|best of both) / cuDNN, isolated" $R/kt_$d.log; save
done
