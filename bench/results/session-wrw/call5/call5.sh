#!/usr/bin/env bash
# Issue 19 (session-wrw, call 5), with call 4's shipped DB: the GPU tests of the Hopper family, miofind.torch and the
# prepared/API paths; then W kernel time on the non-ResNet set (bench_kernel_time --tma) in FP16 and BF16.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 330 python3 -m pytest -v -m gpu -p no:cacheprovider -n 12 tests/implicit_gemm_hopper tests/torch \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -1 $OUT/tests.log; grep -E "FAILED|ERROR" $OUT/tests.log | head; gzip -f $OUT/tests.log
timeout 200 python3 bench/bench_kernel_time.py --set nonresnet --dirs W --dtypes FP16,BF16 --tma --iters 30 --deadline 185 \
  --json $OUT/kt_nr.json > $OUT/kt_nr.log 2>&1
echo "nonresnet rc=$?"; grep -A3 "geomean best" $OUT/kt_nr.log
