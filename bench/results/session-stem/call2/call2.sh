#!/usr/bin/env bash
# Session stem, call 2: the small-C kernels after call 1 (forward: B fragments as 8-byte loads, y stored as 16-byte
# channel runs after a quad transpose; backward weights: the pair-word patch from one global load an element): the
# family's GPU tests, bench_small_c.py over the space again, memcheck and racecheck, the stress test.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_small_c > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests.log | cut -c1-300 | head; save
timeout 290 python3 bench/bench_small_c.py --space --n 32,1 --dtypes FP16,BF16 --dirs F,W --deadline 260 --json $R/small_c.json > $R/small_c.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^    " $R/small_c.log | tail -50; grep -E "^    " $R/small_c.log | head -10 | cut -c1-300; save
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool python3 bench/sanitize_driver.py --solvers ConvImplicitGemmSmallCFwd,ConvImplicitGemmSmallCWrw > $R/$tool.log 2>&1
  echo "$tool rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/$tool.log; save
done
left=$(( 590 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q -m gpu -p no:cacheprovider tests/core/test_stress_gpu.py > $R/stress.log 2>&1
echo "stress rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/stress.log)"; grep -E "^(FAILED|ERROR)|mismatch" $R/stress.log | cut -c1-300 | head -5; save
