#!/usr/bin/env bash
# Session nov29f, call 5 (any sm_90; an H200; session nov29e call 10 again, its warmup given time to finish): issue 18's ResNet-50 first training step
# at batch 48 under AMP (channels_last FP16: where the new ConvImplicitGemmHopperFwdTmaStore is a candidate of the
# forward finds), fresh processes, empty user DB, at the final code: `miofind warmup --arch sm_90`, then
# `bench_cold.py --resnet50 --resnet-configs amp --skip-layers` (cuDNN benchmark mode's first step, miofind.torch with
# the kernel cache warmup left, and with caches copied fresh from it).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 180 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -2 $R/warmup.log; save
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 260 python3 bench/bench_cold.py --resnet50 \
  --resnet-configs amp --skip-layers --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --out $R/first > $R/first.log 2>&1
echo "first step rc=$? $(el) s"; grep -E "^\{" $R/first.log | cut -c1-300; save; echo "all $(el) s"
