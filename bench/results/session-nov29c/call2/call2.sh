#!/usr/bin/env bash
# Session nov29c, call 2 (any sm_90, about 7 minutes): issue 18, a find measuring each candidate as soon as it is
# prepared while the later ones' module loads and plans go on in the threads (pipeline.patch, find.Preparing).
# The tree as it stands is the after side; the before side is a copy with pipeline.patch reversed (the memo of call 1
# in both). Session nov29b's call1/ab.py on bench_cold's 15 FP32 warm rows, 3 rounds, alternating, after
# `miofind warmup --arch sm_90`; then the after tree's GPU tests of a find. Leaves /tmp/warm-kc and /tmp/warm-cupy
# for call 3 (bench_cold) while the machine stays warm.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
B=/tmp/before; rm -rf $B; mkdir -p $B
cp -r miofind solvers kernels_src finddb bench tests scripts pyproject.toml $B/
ROOT=$PWD; (cd $B && patch -s -R -p1 < $ROOT/bench/results/session-nov29c/call2/pipeline.patch) || { echo "reverse patch failed"; exit 1; }
rm -rf /tmp/warm-kc /tmp/warm-cupy
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 \
  bench/results/session-nov29b/call1/ab.py --before $B --after . --dtypes fp32 --rounds 3 \
  --out $R/ab_pipe.json > $R/ab_pipe.log 2>&1
echo "ab rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab_pipe.log; save
# the timing tests are marked serial (they time the GPU against itself): alone, after the parallel run
(export MIOFIND_DB=sqlite:////tmp/pipe-tests.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-tests \
  && timeout 150 python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider tests/core/test_api_gpu.py \
     tests/core/test_tiered_gpu.py tests/core/test_prepared_gpu.py tests/core/test_wrong_solver_gpu.py \
     tests/core/test_verify_gpu.py tests/core/test_stress_gpu.py tests/core/test_isolate_gpu.py \
     tests/core/test_reference_gpu.py tests/cudnn \
  ; timeout 40 python3 -m pytest -q -m "gpu and serial" -p no:cacheprovider tests/core/test_timing_gpu.py) \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "passed|failed" $R/tests.log | tail -3
gzip -f $R/*.log $R/ab_*.json; save; echo "all $(el) s"
