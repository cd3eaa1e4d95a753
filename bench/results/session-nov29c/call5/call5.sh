#!/usr/bin/env bash
# Session nov29c, call 5 (any sm_90, about 6 minutes): issue 18, the FFT solvers deferred from a predicted 1.3x
# (defer_fft.patch: Solver.defer_factor). The tree is the after side; the before side is a copy with the patch
# reversed. Session nov29b's call1/ab.py on bench_cold's 15 FP32 warm rows, 3 rounds, alternating, after
# `miofind warmup --arch sm_90`; then the after tree's tiered and API GPU tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
B=/tmp/before; rm -rf $B; mkdir -p $B
cp -r miofind solvers kernels_src finddb bench tests scripts pyproject.toml $B/
ROOT=$PWD; (cd $B && patch -s -R -p1 < $ROOT/bench/results/session-nov29c/call5/defer_fft.patch) || { echo "reverse patch failed"; exit 1; }
rm -rf /tmp/warm-kc /tmp/warm-cupy
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 170 python3 \
  bench/results/session-nov29b/call1/ab.py --before $B --after . --dtypes fp32 --rounds 3 \
  --out $R/ab_defer.json > $R/ab_defer.log 2>&1
echo "ab rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab_defer.log; save
(export MIOFIND_DB=sqlite:////tmp/defer-tests.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-tests \
  && timeout 60 python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider tests/core/test_api_gpu.py \
     tests/core/test_tiered_gpu.py) > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "passed|failed" $R/tests.log | tail -2
gzip -f $R/*.log $R/ab_*.json; save; echo "all $(el) s"
