#!/usr/bin/env bash
# Prepared (session nov28g, its device time spent). Issue 18 after the GEMM kinds queried ahead of a find (7009e968):
# session nov28f's call_cold.sh again (warmup, bench_cold's 30 rows: the fresh-install rows whose GEMM candidate waited
# 104-198 ms in session nov28g's call 3), then the GPU tests the change touches (tests/gemm: the bridge, the set-up,
# the kinds; the tiered and API finds), then bench_cold's ResNet-50 first training step at batch 48, FP32 and AMP
# (issue 18's <= 5 s), from the kernel cache that warmup filled. Any sm_90 device; about 9 minutes.
# Usage: bash bench/results/session-nov28g/prepared/call_cold_kinds.sh
set -uo pipefail
T0=$(date +%s)
bash bench/results/session-nov28f/prepared/call_cold.sh     # /tmp/r (device-env's install included), $OUT/r.tgz
R=/tmp/r
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -m "gpu and not serial" \
  -n 14 -p no:cacheprovider -p no:benchmark -rfE tests/gemm tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; save
left=$(( 570 - $(el) ))
[ $left -gt 60 ] && timeout $left python3 bench/bench_cold.py --out $R/first --skip-layers --resnet50 --resnet-configs fp32,amp \
  --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout $((left - 10)) > $R/first.log 2>&1
echo "first step rc=$? $(el) s"; grep -A4 "^| config" $R/first/bench_cold.md 2>/dev/null
gzip -f $R/*.log; save
