#!/usr/bin/env bash
# Session dec02c, call 2 (an H200): the whole bench_cold.py table at 86903124 (measure_order reverted: the code of
# session dec02a's call 2), as call 1; then the FP32 rows of the two shapes whose warm finds missed 3x torch's first
# call in the runs so far (ResNet-50 3x3 128-channel, Inception 1x7), three more times each, to show how often they
# land within 3x.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c2-kc CUPY_CACHE_DIR=/tmp/c2-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c2-kc --installed-cupy-cache /tmp/c2-cupy"
timeout $(( 560 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9
gzip -f $R/*.log; save
for i in 1 2 3; do
  [ $(el) -gt 480 ] && break
  timeout $(( 570 - $(el) )) python3 bench/bench_cold.py --out $R/rep$i $I --timeout 60 --dtypes fp32 \
    --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 > $R/rep$i.log 2>&1
  echo "rep$i rc=$? $(el) s"
  sed -n '/^| layer | type | dir | torch/,/^$/p' $R/rep$i/bench_cold.md | cut -d'|' -f2-8 | tail -n +3
  gzip -f $R/rep$i.log; save
done
echo "all $(el) s"
