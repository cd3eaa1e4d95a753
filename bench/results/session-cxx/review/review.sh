#!/usr/bin/env bash
# Session cxx, review run: after the review mends (implicit GEMM's multi-launch invoker now runs its recipe's
# steps; the C++ workspace helper), the implicit GEMM family's GPU tests and the C++ hot path's tests.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/rv; mkdir -p $R
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
timeout 200 python3 -m pytest -m gpu tests/implicit_gemm -q -p no:cacheprovider -rfEs -n 8 > $R/igemm.log 2>&1
echo "igemm rc=$?"; tail -2 $R/igemm.log
wait
timeout 120 python3 -m pytest -m gpu tests/torch/test_fast.py -q -p no:cacheprovider -rfEs > $R/fast.log 2>&1
echo "fast rc=$?"; tail -2 $R/fast.log
cd $OUT && tar czf rv.tgz rv && rm -rf rv
