#!/usr/bin/env bash
# session call 1: GPU tests of the changed parts, then an A/B of ResNet-50's first FP32 step (before = 274a80c)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch && rm -f kernels_src/verify_errors.cu tests/core/test_verify_gpu.py)
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/r/device.txt
# 1. targeted GPU tests (after)
export MIOFIND_DB=sqlite:////tmp/mf/t.sqlite MIOFIND_KERNEL_CACHE=/tmp/mf/kc
mkdir -p /tmp/mf
timeout 200 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/core/test_verify_gpu.py tests/core/test_api_gpu.py \
  tests/core/test_wrong_solver_gpu.py tests/core/test_tiered_gpu.py tests/core/test_isolate_gpu.py tests/core/test_prepared_gpu.py \
  tests/direct tests/winograd 2>&1 | tail -25 > $OUT/r/tests.log
tail -3 $OUT/r/tests.log
# 2. the installed caches both sides start from (after tree: a superset of before's builds)
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 ) > $OUT/r/warmup.log 2>&1
tail -2 $OUT/r/warmup.log
# 3. two alternating rounds
unset MIOFIND_DB
for r in 1 2; do
  for side in before after; do
    rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc
    dir=$PWD; [ $side = before ] && dir=/tmp/before
    (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout 100 \
       python3 bench/find_breakdown.py --out $OUT/r/fb-$side-$r) > $OUT/r/fb-$side-$r.log 2>&1
    grep -m1 step_s $OUT/r/fb-$side-$r.log | sed "s/^/$side $r: /"
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
