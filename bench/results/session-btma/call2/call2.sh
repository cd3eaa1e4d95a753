#!/usr/bin/env bash
# Issue 19 (call 2): call 1's GPU tests again, verbose (call 1's run was cut at 170 s with 2 failures unnamed), then
# compute-sanitizer memcheck and racecheck on the Hopper backward data's configs of the sanitize driver's problems,
# the new persistent copy-engine one over four stride phases (nhwc_tma_b_s2) among them.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 300 python3 -m pytest -v -m gpu -p no:cacheprovider -n 10 tests/implicit_gemm_hopper/test_tma.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "bwd or Bwd or tma or claim" > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -3 $OUT/tests.log; grep -E " FAILED|^E  " $OUT/tests.log | head -40
( OUT=$OUT/sanitize SANITIZE_TIMEOUT=200 timeout 230 scripts/sanitize --solvers ConvImplicitGemmHopperBwd --every ) > $OUT/sanitize.txt 2>&1
echo "sanitize rc=$?"; tail -4 $OUT/sanitize.txt
