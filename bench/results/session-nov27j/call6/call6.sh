#!/usr/bin/env bash
# Session nov27j, call 6, at the final code: session nov27i's prepared channels-first W reference applied
# (reference_conv_wrw_cf; call 1 timed it at 0.61-0.88x naive_conv_wrw's time; harness W estimate 0.6e12 FLOP/s) and
# the GEMM configs. (1) the GPU tests of the float64 reference, the naive solvers, the find API, the GEMM family and the
# tiered finds; (2) `miofind warmup`, then bench/bench_cold.py with the warmed cache as the installed
# one. Only r.tgz is left in $OUT.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/kc-t MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 260 python3 -m pytest -q -p no:cacheprovider \
  -n 14 -m "gpu and not serial" tests/core/test_reference_gpu.py tests/direct tests/core/test_api_gpu.py tests/gemm \
  tests/core/test_tiered_gpu.py 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -10; gzip -f $R/tests.log; pack
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; pack
left=$(( 590 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -c1-140
pack
