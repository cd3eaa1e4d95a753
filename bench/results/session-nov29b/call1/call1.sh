#!/usr/bin/env bash
# Session nov29b, call 1 (any sm_90): the device timing in sets (e34c9e85) on the GPU.
# 1. GPU tests of the timing and of a find (r/tests.log); 2. agree.py: the timing in sets against the run-by-run
# timing it replaced (the before harness: e34c9e85~1's), same invokers, interleaved (r/agree.*);
# 3. ab.py: bench_cold's FP32 warm finds before / after, each side in its own tree, with torch's first call (r/ab.*).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cupyc
C=$PWD/bench/results/session-nov29b/call1
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
B=/tmp/before; rm -rf $B; mkdir -p $B
cp -r miofind solvers kernels_src finddb bench tests pyproject.toml $B/
# the harness before e34c9e85 (`git show e34c9e85~1:miofind/harness.py`, carried in .whl/; timing.patch is the diff)
cp .whl/harness_before.py $B/miofind/harness.py && cp .whl/harness_before.py /tmp/harness_before.py
echo "before tree $(el) s"; grep -c "TIMED_FIRST_GROUP" $B/miofind/harness.py
timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/core/test_timing_gpu.py tests/core/test_harness.py \
  tests/core/test_api_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; save
timeout 170 python3 $C/agree.py --before /tmp/harness_before.py --out $R/agree.json --rounds 4 --deadline 110 \
  > $R/agree.log 2>&1
echo "agree rc=$? $(el) s"; tail -4 $R/agree.log; save
timeout 250 python3 $C/ab.py --before $B --after . --dtypes fp32 --rounds 2 --out $R/ab.json > $R/ab.log 2>&1
echo "ab rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab.log
gzip -f $R/agree.json $R/ab.json; save
echo "all $(el) s"
