#!/usr/bin/env bash
# Ran as session nov29c call 1 (H200): `bash bench/results/session-nov29b/prepared/call_host_ab.sh` (this copy), carry .whl.
# Prepared (session nov29b; its device time was spent). Any sm_90, about 8 minutes. Issue 18: two host-time patches of
# a warm find, each A/B against this tree (call 1's ab.py, bench_cold's FP32 warm rows, 2 rounds, alternating trees):
#   gil_find.patch  - the whole find under harness.prompt_gil (call 3's variants: 25.9 against 27.5 ms geomean over
#                     6 rows, ranges overlapping);
#   memo_find.patch - the find's tiered.Solutions memo: the deferral check's solutions reused by the preparation
#                     (memo_cpu.txt: 0.8-1.2 ms less host work a problem on the 2-core CPU machine).
# Then each patched tree's GPU tests of a find (r/tests_<name>.log). Adopt a patch (git apply) only where its after
# side is faster in most rows; the memo patch carries its CPU test (tests/core/test_tiered.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
ROOT=$PWD; P=$ROOT/bench/results/session-nov29b/prepared
for name in gil memo; do
  A=/tmp/after_$name; rm -rf $A; mkdir -p $A
  cp -r miofind solvers kernels_src finddb bench tests scripts pyproject.toml $A/
  (cd $A && patch -s -p1 < $P/${name}_find.patch) || { echo "$name: patch failed"; exit 1; }
done
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
for name in gil memo; do
  MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 \
    bench/results/session-nov29b/call1/ab.py --before . --after /tmp/after_$name --dtypes fp32 --rounds 2 \
    --out $R/ab_$name.json > $R/ab_$name.log 2>&1
  echo "ab $name rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab_$name.log; save
done
for name in gil memo; do
  A=/tmp/after_$name
  # the timing tests are marked serial (they time the GPU against itself): alone, after the parallel run
  (cd $A && export PYTHONPATH=$A:/tmp/site MIOFIND_DB=sqlite:////tmp/$name-tests.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-tests \
    && timeout 80 python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider tests/core/test_api_gpu.py \
       tests/core/test_tiered_gpu.py tests/core/test_prepared_gpu.py \
    && timeout 40 python3 -m pytest -q -m "gpu and serial" -p no:cacheprovider tests/core/test_timing_gpu.py) \
    > $R/tests_$name.log 2>&1
  echo "tests $name rc=$? $(el) s"; grep -E "passed|failed" $R/tests_$name.log | tail -2
done
gzip -f $R/*.log $R/ab_*.json; save; echo "all $(el) s"
