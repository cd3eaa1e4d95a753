#!/usr/bin/env bash
# Session stem, call 7: the final small-C kernels (call 6's ASYNC prefetch reverted: the forward kernel is call 3's,
# byte for byte): the family's GPU tests, memcheck and racecheck on the sanitizer's small-C problem (now with an odd
# element count of x).
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
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool python3 bench/sanitize_driver.py --solvers ConvImplicitGemmSmallCFwd,ConvImplicitGemmSmallCWrw > $R/$tool.log 2>&1
  echo "$tool rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/$tool.log; save
done
