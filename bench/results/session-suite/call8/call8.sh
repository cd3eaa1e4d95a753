#!/usr/bin/env bash
# Session suite, call 8: the Python launch path through libcuda by ctypes (the identity test's PyTorch children ran
# without miofind._native in call 7's first step and imported CuPy through CuPy's driver binding there). The identity
# tests before the native launcher is built (the Python path), then the GPU suite's part 2 (FFT, GEMM, implicit GEMM,
# the Hopper family, Winograd: generic module instances now written through the runtime) with it.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
rm -f miofind/_native*.so
PYTHONPATH=$PWD:/tmp/site timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/core/test_device_gpu.py \
  tests/core/test_native.py > $R/python_path.log 2>&1; echo "identity + native tests, Python path, rc=$?: $(tail -1 $R/python_path.log)"
grep -E "^(FAILED|ERROR)|^E  " $R/python_path.log | head -10
OUT=$R/part2 BENCH=0 XDIST=14 timeout 420 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm tests/implicit_gemm_hopper \
  tests/winograd tests/core/test_device_gpu.py > $R/part2.log 2>&1
echo "part2 rc=$?"; sed -n '/== summary ==/,$p' $R/part2.log; grep -E "^(FAILED|ERROR)" $R/part2/gpu-tests.log | head
gzip -f $R/part2/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
