#!/usr/bin/env bash
# Session nov29i, call 7 (an H200): does any copy-engine config beat the cp.async loads on the narrow-channel layers where
# the padded default does not apply (C = 24, 32, 48, 80: Inception-v3's stem and 5x5, MobileNetV2's 24 -> 144)?
# `miofind tune` of the Hopper forward, exhaustive over the persistent copy-engine configs (--where TMA=1,PERSIST=1; every
# stage count, tile, ping-pong), then over the cp.async ones (--where TMA=0) into another user DB, at most 200 configs
# / 30 s a layer each; each tune ends with a find of every solver (cuDNN's plans too), whose records give the ratios.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 CUPY_CACHE_DIR=/tmp/cupy7
F=bench/results/session-nov29i/call7/layers.txt
for side in "tma TMA=1,PERSIST=1" "cpasync TMA=0"; do
  set -- $side
  left=$(( 560 - $(el) )); [ $left -lt 60 ] && { echo "skip $1: $left s left"; continue; }
  MIOFIND_DB=sqlite:///$R/$1.sqlite timeout $left python3 -m miofind tune --file $F \
    --tune-solver ConvImplicitGemmHopperFwd --strategy exhaustive --where $2 --max-configs 200 --max-seconds 30 \
    --patience 200 --retune --json-out $R/tune_$1.json > $R/tune_$1.txt 2>&1
  echo "$1 rc=$? $(el) s"; tail -2 $R/tune_$1.txt; save
done
