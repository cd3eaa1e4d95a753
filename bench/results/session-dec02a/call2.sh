#!/usr/bin/env bash
# Session dec02a, call 2 (an H200): the whole bench_cold.py table at the kept code (3350d2d2: the kept preparation
# threads of session dec01e, nothing of call 1), as session dec01d's call 1: `miofind warmup --arch sm_90` on the GPU,
# then bench_cold's 30 rows (FP32 NCHW and FP16 NHWC, F/B/W, warm kernel cache and fresh-install processes from copies
# of the installed caches) against torch's benchmark-mode first calls.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy"
timeout $(( 585 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9
gzip -f $R/*.log; save; echo "all $(el) s"
