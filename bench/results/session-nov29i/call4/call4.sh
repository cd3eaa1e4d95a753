#!/usr/bin/env bash
# Session nov29i, call 4 (any sm_90; an H200): issue 18's cold finds at this code (the padded copy-engine configs now
# among the Hopper F/B candidates where C % 64 != 0, e.g. bench_cold's Inception 1x7 rows of 160 channels):
# `miofind warmup --arch sm_90`, then bench_cold.py (FP32 and FP16, warm and empty caches, torch's benchmark-mode first
# call beside), as session nov29b's call 5.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
left=$(( 585 - $(el) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
gzip -f $R/*.log; save; echo "all $(el) s"
