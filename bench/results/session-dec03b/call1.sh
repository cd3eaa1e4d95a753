#!/usr/bin/env bash
# Session dec03b, call 1 (issues 18 and 20): the retrained cost model (20261203-355ac46ce9, shipped in 5f25c81f) in
# finds, on the GPU. (1) `miofind warmup --arch sm_90` into an installed cache, then bench/bench_cold.py's whole table
# against torch's first calls, as session dec02d's call 4 did at the model before. (2) bench/keep_check.py: the first
# answer of a background-mode find against its final one (deferred solvers measured), on random layers neither model
# trained on (session dec03a's layers23.txt, whose every solver call 3 timed). (3) The tiered, API and isolate GPU
# tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c1-kc --installed-cupy-cache /tmp/c1-cupy"
timeout $(( 380 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9
save
cp -r /tmp/c1-kc /tmp/c1-kc2; rm -f /tmp/c1-keep.sqlite
MIOFIND_KERNEL_CACHE=/tmp/c1-kc2 CUPY_CACHE_DIR=/tmp/c1-cupy MIOFIND_DB=/tmp/c1-keep.sqlite \
  timeout -k 10 $(( 500 - $(el) )) python3 bench/keep_check.py --file bench/results/session-dec03a/layers23.txt \
  --out $R/keep.jsonl --seconds $(( 430 - $(el) )) --chunk 16 --wait 60 > $R/keep.log 2>&1
echo "keep rc=$? $(el) s"; tail -2 $R/keep.log
cp /tmp/c1-keep.sqlite $R/keep.sqlite 2>/dev/null; gzip -f $R/keep.sqlite; save
export MIOFIND_KERNEL_CACHE=/tmp/c1-kct CUPY_CACHE_DIR=/tmp/c1-cupyt MIOFIND_DB=sqlite:////tmp/c1-t-user.sqlite
timeout $(( 575 - $(el) )) python3 -m pytest -q -p no:cacheprovider -m gpu tests/core/test_tiered_gpu.py \
  tests/core/test_api_gpu.py tests/core/test_isolate_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log
gzip -f $R/*.log; tar czf $OUT/r.tgz -C /tmp r
echo "all $(el) s"
