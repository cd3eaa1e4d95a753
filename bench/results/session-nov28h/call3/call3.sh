#!/usr/bin/env bash
# Session nov28h call 3 (any sm_90): the GPU tests after the bridge-kind change (68b9e764: tests/gemm, the tiered and
# API finds), then issue 18's ResNet-50 first training step at batch 48, FP32 and AMP, after `miofind warmup`, with the
# installed caches as the process's own (MIOFIND_KERNEL_CACHE exported: call 1's bench_cold --resnet50 child had none
# and this device has no platformdirs) and from fresh copies of them.
# Usage: bash bench/results/session-nov28h/call3/call3.sh
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
export MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy
timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -n 3 $R/warmup.log
left=$(( 570 - $(el) ))
timeout $left python3 bench/bench_cold.py --out $R/first --skip-layers --resnet50 --resnet-configs fp32,amp \
  --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout $((left - 10)) > $R/first.log 2>&1
echo "first step rc=$? $(el) s"; tail -n 5 $R/first.log; grep -A4 "^| config\|^| model" $R/first/bench_cold.md 2>/dev/null
gzip -f $R/*.log; save
