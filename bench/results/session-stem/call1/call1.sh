#!/usr/bin/env bash
# Session stem, call 1: the small-C implicit GEMM (ConvImplicitGemmSmallCFwd / Wrw, C <= 4) on the GPU: the first
# layers' verification, then bench_small_c.py (every config of its space, our other solvers and cuDNN's plans on the
# same buffers) on five CNN first layers at N = 32 and 1, FP16 and BF16, F and W; the family's GPU tests; memcheck.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 100 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/implicit_gemm_small_c -k "first_layers" > $R/tests_first.log 2>&1
echo "first-layer tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_first.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests_first.log | cut -c1-300 | head -20; save
timeout 300 python3 bench/bench_small_c.py --space --n 32,1 --dtypes FP16,BF16 --dirs F,W --deadline 270 --json $R/small_c.json > $R/small_c.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^    " $R/small_c.log | tail -50; grep -E "^    " $R/small_c.log | head -10 | cut -c1-300; save
left=$(( 540 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_small_c > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; save
left=$(( 590 - ($(date +%s) - T0) ))
timeout $left compute-sanitizer --tool memcheck python3 bench/sanitize_driver.py --solvers ConvImplicitGemmSmallCFwd,ConvImplicitGemmSmallCWrw > $R/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s) - T0 )) s"; tail -5 $R/memcheck.log; save
