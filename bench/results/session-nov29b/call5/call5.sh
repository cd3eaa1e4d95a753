#!/usr/bin/env bash
# Session nov29b, call 5 (any sm_90): a find preparing an own solver's configs as soon as they are listed (find.Early).
# 1. `miofind warmup`; 2. GPU tests of a find (api, tiered, isolate, prepared: r/tests.log); 3. call 1's ab.py: the
# FP32 warm finds before (find.py of the commit before, carried as .whl/find_before.py) / after, on the warmup's kernel
# cache (r/ab.*); 4. bench_cold, FP32 and FP16, warm and empty caches, torch beside (r/cold/).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log
MIOFIND_KERNEL_CACHE=/tmp/kc-tests timeout 100 python3 -m pytest -q -m gpu -n 4 -p no:cacheprovider \
  tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/core/test_isolate_gpu.py tests/core/test_prepared_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.log; save
B=/tmp/before; rm -rf $B; mkdir -p $B
cp -r miofind solvers kernels_src finddb bench tests pyproject.toml $B/ && cp .whl/find_before.py $B/miofind/find.py
cp -r /tmp/warm-kc /tmp/ab-kc; cp -r /tmp/warm-cupy /tmp/ab-cupy
MIOFIND_KERNEL_CACHE=/tmp/ab-kc CUPY_CACHE_DIR=/tmp/ab-cupy timeout 150 python3 bench/results/session-nov29b/call1/ab.py \
  --before $B --after . --dtypes fp32 --rounds 2 --out $R/ab.json > $R/ab.log 2>&1
echo "ab rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab.log; save
timeout 200 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
gzip -f $R/*.log $R/ab.json; save; echo "all $(el) s"
