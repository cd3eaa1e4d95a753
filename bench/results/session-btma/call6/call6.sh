#!/usr/bin/env bash
# Issue 19 (call 6), with call 3's shipped DB: the binary-cache GPU test call 5 failed (it now counts only its own
# kernel's compiles), then kernel time of B on the non-ResNet set in FP16 and BF16 (bench_kernel_time --tma --persist).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -n 4 tests/core/test_kernel_cache.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -1 $OUT/tests.log
timeout 200 python3 bench/bench_kernel_time.py --set nonresnet --dirs B --dtypes FP16,BF16 --tma --persist --iters 30 \
  --deadline 185 --json $OUT/kt_nr.json > $OUT/kt_nr.log 2>&1
echo "nonresnet rc=$?"; grep -A4 "geomean best" $OUT/kt_nr.log
