#!/usr/bin/env bash
# Prepared (session nov29b; its device time was spent). Any sm_90, about 7 minutes. Issue 18: the whole find under
# harness.prompt_gil (gil_find.patch), which call 3's variants showed at 25.9 against 27.5 ms geomean over 6 rows
# (3 rounds, ranges overlapping). `miofind warmup`, then call 1's ab.py, FP32 rows, 3 rounds: before = this tree,
# after = a copy with the patch (r/ab.*); then the find's GPU tests on the patched copy (r/tests.log). Adopt the patch
# (git apply) only where the after side is faster in most rows; its CPU tests: tests/core.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
ROOT=$PWD; A=/tmp/after; rm -rf $A; mkdir -p $A
cp -r miofind solvers kernels_src finddb bench tests scripts pyproject.toml $A/
(cd $A && patch -s -p1 < $ROOT/bench/results/session-nov29b/prepared/gil_find.patch) || { echo "patch failed"; exit 1; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 \
  bench/results/session-nov29b/call1/ab.py --before . --after $A --dtypes fp32 --rounds 3 --out $R/ab.json > $R/ab.log 2>&1
echo "ab rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab.log; save
(cd $A && PYTHONPATH=$A:/tmp/site MIOFIND_DB=sqlite:////tmp/gil-tests.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-tests \
  timeout 90 python3 -m pytest -q -m gpu \
  -n 8 -p no:cacheprovider tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/core/test_timing_gpu.py) \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.log
gzip -f $R/*.log $R/ab.json; save; echo "all $(el) s"
