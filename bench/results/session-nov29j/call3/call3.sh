#!/usr/bin/env bash
# Session nov29j, call 3 (any sm_90; an H200):
# 1. bench_convs.py over PADDED_C, forward, FP16 and BF16 NHWC N = 32, with no system DB (MIOFIND_SYSTEM_DB=none): the
#    shipped DB's H100-tuned configs of 10 Inception layers would pin the find to a config of the older space (call 2),
#    so this is the find's own choice among the default and its alternates (the 32-deep ones among them).
# 2. sweep_configs.py on ResNet-50's forward layers (FP16, N = 32; C % 64 == 0, where the space has no TMA = 2 config):
#    26 TMA = 2 tiles (row64_extra.json) against the find's configs (--others) and cuDNN's plans.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3
export MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none
for dt in FP16 BF16; do
  left=$(( 330 - $(el) )); [ $left -lt 40 ] && { echo "skip $dt: $left s left"; continue; }
  rm -f /tmp/u3.sqlite
  timeout $left python3 bench/bench_convs.py --dtype $dt --layout NHWC --cudnn-harness --dirs F --set padded \
    --out $R/nosys_padded_$dt > $R/nosys_F_padded_$dt.txt 2>&1
  echo "$dt rc=$? $(el) s"; grep -E "harness, geometric mean" $R/nosys_F_padded_$dt.txt; save
done
unset MIOFIND_SYSTEM_DB
left=$(( 585 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir F --set resnet50 --layers all --where "TMA=2" \
  --extra "$(cat bench/results/session-nov29j/row64_extra.json)" --others ConvImplicitGemmHopperFwd --iters 20 \
  --deadline $(( left - 15 )) --json $R/sweep_r50.json > $R/sweep_r50.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_r50.txt; save
