#!/usr/bin/env bash
# Session nov29d, call 4 (any sm_90): issue 18, the GEMM candidates' first run in the find's preparation (find.first_run,
# b22e111c). A/B of warm finds with session nov29b's call1/ab.py (bench_cold's unseen rows, FP16 and FP32, empty user
# DB over the shipped DB, each side its own tree, alternating rounds, torch's first call beside them), after
# `miofind warmup --arch sm_90`. Before = this tree with the GEMM family's first_run_loads removed. Then the GPU tests
# of the change (tests/gemm/test_first_run.py) and of a find (api, tiered, prepared; the timing tests serial).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
B=/tmp/before; rm -rf $B; mkdir -p $B
cp -r miofind solvers kernels_src finddb bench tests scripts pyproject.toml $B/
sed -i '/^    first_run_loads = True /d' $B/solvers/gemm_base.py
grep -c first_run_loads $B/solvers/gemm_base.py solvers/gemm_base.py
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 300 python3 \
  bench/results/session-nov29b/call1/ab.py --before $B --after . --dtypes fp16,fp32 --rounds 2 \
  --out $R/ab_first_run.json > $R/ab_first_run.log 2>&1
echo "ab rc=$? $(el) s"; sed -n '/^| layer/,$p' $R/ab_first_run.log; save
left=$(( 560 - $(el) ))
if [ $left -gt 30 ]; then
  (export MIOFIND_DB=sqlite:////tmp/tests.sqlite MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy \
    && timeout $left python3 -m pytest -q -m "gpu and not serial" -n 8 -p no:cacheprovider tests/gemm/test_first_run.py \
       tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/core/test_prepared_gpu.py \
    && timeout 40 python3 -m pytest -q -m "gpu and serial" -p no:cacheprovider tests/core/test_timing_gpu.py) \
    > $R/tests.log 2>&1
  echo "tests rc=$? $(el) s"; grep -E "passed|failed" $R/tests.log | tail -3
fi
gzip -f $R/*.log $R/*.json; save; echo "all $(el) s"
