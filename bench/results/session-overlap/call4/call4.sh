#!/usr/bin/env bash
# A/B of ResNet-50's first FP32 step with the wheels' bytecode compiled (as a normal pip install leaves it)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
python3 -c "import time; t=time.perf_counter(); import sqlalchemy; print('sqlalchemy import %.0f ms' % ((time.perf_counter()-t)*1e3))"
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch && rm -f kernels_src/verify_errors.cu tests/core/test_verify_gpu.py)
R=$OUT/r4; mkdir -p $R
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 170 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
unset MIOFIND_DB
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {
  local side=$1 name=$2; shift 2; fresh
  local dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout 60 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  grep -m1 step_s $R/fb-$name.log | sed "s/^/$name: /"
}
for r in 1 2; do run_fb before before-$r; run_fb after after-$r; done
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
