#!/usr/bin/env bash
# Session dec02d, call 4 (issue 18): bench_cold's whole table at this tree (MIOFIND_PREDICT_KEEP=3, tiered's waits):
# `miofind warmup --arch sm_90` into an installed cache, then bench/bench_cold.py against torch's first calls.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c4-kc CUPY_CACHE_DIR=/tmp/c4-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c4-kc --installed-cupy-cache /tmp/c4-cupy"
timeout $(( 575 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9
gzip -f $R/*.log; save
echo "all $(el) s"
