#!/usr/bin/env bash
# Prepared (session nov28f, not run: no device time was left to the session). Issue 18: where a warm find's lookup_ms
# (4-13 ms in session-nov27i/call10, against 2.6-5.5 ms for the same host work on the 2-core CPU machine with no GPU,
# session-nov28f/lookup_cpu.txt) goes: `miofind warmup`, then bench/bench_cold.py FP32 and FP16, its finds' timing now
# carrying lookup_parts; lookup_parts.py prints them per row. Any H100 or H200 (the torch side runs in the same call).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
timeout 200 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"; save
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
python3 bench/results/session-nov28f/prepared/lookup_parts.py $R/cold/bench_cold.json | tee $R/lookup_parts.txt
gzip -f $R/*.log; save
