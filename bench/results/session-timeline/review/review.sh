#!/usr/bin/env bash
# Session timeline, review check: after the review mends (first-call allocator context shared, LtGemm's trace branch),
# the C++ path's tests, the torch GPU suite, and the GEMM and Winograd suites.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/review; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
timeout 240 python3 -m pytest -q -m gpu -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py -p no:cacheprovider > $R/tests.log 2>&1
echo "torch tests rc=$?"; tail -1 $R/tests.log; grep -E "^FAILED" $R/tests.log | head -5 | cut -c1-300
timeout 120 python3 -m pytest -q -m gpu -n 8 tests/gemm tests/winograd -p no:cacheprovider > $R/gemm-wino.log 2>&1
echo "gemm/winograd rc=$?"; tail -1 $R/gemm-wino.log; grep -E "^FAILED" $R/gemm-wino.log | head -5
cd $OUT && tar czf review.tgz review && rm -rf review
