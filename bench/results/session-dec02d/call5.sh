#!/usr/bin/env bash
# Session dec02d, call 5: the torch GPU tests at this tree (MIOFIND_PREDICT_KEEP=3 defers more of a miss's candidates
# to the background, whose jobs now wait for no find to run before their module loads), then ResNet-50's first training
# step at batch 48 (unshipped) in fresh processes, issue 18's target (<= 5 s): `miofind warmup`, then
# `bench_cold.py --resnet50 --skip-layers` for FP32 and, time permitting, AMP.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
( export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd MIOFIND_DB=sqlite:////tmp/r/u.sqlite
  timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/torch/test_torch.py \
    tests/torch/test_torch_gpu.py > $R/torch_gpu.log 2>&1
  echo "torch gpu rc=$? $(el) s" )
tail -2 $R/torch_gpu.log; grep -E "^(FAILED|ERROR)" $R/torch_gpu.log | head; save
MIOFIND_KERNEL_CACHE=/tmp/c5-kc CUPY_CACHE_DIR=/tmp/c5-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c5-kc --installed-cupy-cache /tmp/c5-cupy"
for cfg in fp32 amp; do
  [ $(el) -gt 440 ] && break
  timeout $(( 575 - $(el) )) python3 bench/bench_cold.py --out $R/r50-$cfg $I --resnet50 --skip-layers \
    --resnet-configs $cfg > $R/r50-$cfg.log 2>&1
  echo "r50 $cfg rc=$? $(el) s"; grep '"model": "resnet50"' $R/r50-$cfg.log | cut -c1-300; save
done
gzip -f $R/*.log; save
echo "all $(el) s"
