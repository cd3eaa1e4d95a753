#!/usr/bin/env bash
# Session dec03c, call 1 (session dec03b's call2.sh, which found no machine) (issues 18 and 20): ResNet-50's first
# training step at batch 48 with the retrained cost model
# (20261203-355ac46ce9) deciding a find's deferrals, FP32 then AMP, fresh processes and an empty user DB through
# miofind.torch, against cuDNN's benchmark mode: `miofind warmup --arch sm_90` into an installed cache, then
# bench_cold.py --resnet50 --skip-layers, its warm run on a copy of the installed cache (session dec02e's call 1
# recipe).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c2-kc CUPY_CACHE_DIR=/tmp/c2-cupy timeout 230 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c2-kc --installed-cupy-cache /tmp/c2-cupy"
rm -rf /tmp/c2-kcw; cp -r /tmp/c2-kc /tmp/c2-kcw
for cfg in fp32 amp; do
  [ $(el) -gt $([ $cfg = fp32 ] && echo 280 || echo 300) ] && break
  MIOFIND_KERNEL_CACHE=/tmp/c2-kcw timeout $(( 395 - $(el) )) python3 bench/bench_cold.py --out $R/r50-$cfg $I \
    --resnet50 --skip-layers --resnet-configs $cfg > $R/r50-$cfg.log 2>&1
  echo "r50 $cfg rc=$? $(el) s"; grep '"model": "resnet50"' $R/r50-$cfg.log | cut -c1-300; save
done
gzip -f $R/*.log; save
echo "all $(el) s"
