#!/usr/bin/env bash
# The GPU suite's part 1 at this commit; then unseen layers' cold finds (bench_cold) before (353ee95: the tree
# with ab.patch reversed) and after, from `miofind warmup`'s caches.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch)
R=$OUT/r3; mkdir -p $R
OUT=$R/p1 BENCH=0 XDIST=12 timeout 270 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch 2>&1 | tail -6
gzip -f $R/p1/gpu-tests.log
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
for side in after before; do
  dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 120 python3 $PWD/bench/bench_cold.py --out $R/cold-$side \
     --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
     --timeout 60) > $R/cold-$side.log 2>&1
  echo "cold $side rc=$?"; tail -16 $R/cold-$side/bench_cold.md 2>/dev/null
done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
