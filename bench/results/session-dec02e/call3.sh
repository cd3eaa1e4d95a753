#!/usr/bin/env bash
# Session dec02e, call 3: the GPU tests of the FFT family (its ranked tiles are now made dicts only up to TUNE_CONFIGS,
# 3c7fe8ad) and of the find and tiered; then bench_cold's whole table a third time at this tree (issue 18), each miofind
# row listing its GC pauses (BENCH_COLD_GC).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
( export CUPY_CACHE_DIR=/tmp/c3-cupyt MIOFIND_KERNEL_CACHE=/tmp/c3-kct MIOFIND_DB=sqlite:////tmp/c3-t.sqlite
  timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu tests/fft tests/core/test_tiered_gpu.py \
    tests/core/test_api_gpu.py > $R/tests.log 2>&1
  echo "tests rc=$? $(el) s" )
grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; save
MIOFIND_KERNEL_CACHE=/tmp/c3-kc CUPY_CACHE_DIR=/tmp/c3-cupy timeout 260 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c3-kc --installed-cupy-cache /tmp/c3-cupy"
BENCH_COLD_GC=1 timeout $(( 590 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9
gzip -f $R/*.log; save
echo "all $(el) s"
