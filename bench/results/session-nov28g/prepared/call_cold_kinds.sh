#!/usr/bin/env bash
# Prepared (session nov28g, its device time spent). Issue 18 after the GEMM kinds queried ahead of a find (7009e968):
# the GPU tests it touches (tests/gemm: the bridge, the set-up, the kinds; the tiered and API finds), then
# session nov28f's call_cold.sh run again (warmup, bench_cold's 30 rows: the fresh-install rows whose GEMM candidate
# waited 104-198 ms in session nov28g's call 3), then bench_cold's ResNet-50 first training step at batch 48, FP32 and
# AMP (issue 18's <= 5 s). Any sm_90 device; about 9 minutes. Usage: bash bench/results/session-nov28g/prepared/call_cold_kinds.sh
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -m "gpu and not serial" \
  -n 14 -p no:cacheprovider -p no:benchmark -rfE tests/gemm tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; save
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
timeout 180 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"; save
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
left=$(( 570 - $(el) ))
[ $left -gt 60 ] && timeout $left python3 bench/bench_cold.py --out $R/first --skip-layers --resnet50 --resnet-configs fp32,amp \
  --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout $((left - 10)) > $R/first.log 2>&1
echo "first step rc=$? $(el) s"; grep -A4 "^| config" $R/first/bench_cold.md 2>/dev/null
gzip -f $R/*.log; save
