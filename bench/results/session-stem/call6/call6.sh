#!/usr/bin/env bash
# Session stem, call 6: the forward's next-tile prefetch (ASYNC: cp.async of the raw input rows into two buffers while
# the block computes): the family's GPU tests (every config of the space on four problems, both ASYNC values);
# bench_small_c.py --find-configs (a find's configs, each with ASYNC and STORE16 flipped) on F at N = 32 and 1;
# memcheck and racecheck.
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
timeout 240 python3 bench/bench_small_c.py --find-configs --n 32,1 --dtypes FP16,BF16 --dirs F --deadline 220 --json $R/small_c.json > $R/small_c.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^    " $R/small_c.log | tail -26; grep -E "^    " $R/small_c.log | head -5 | cut -c1-300; save
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool python3 bench/sanitize_driver.py --solvers ConvImplicitGemmSmallCFwd,ConvImplicitGemmSmallCWrw > $R/$tool.log 2>&1
  echo "$tool rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/$tool.log; save
done
