#!/usr/bin/env bash
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch && rm -f kernels_src/verify_errors.cu tests/core/test_verify_gpu.py)
R=$OUT/r2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
unset MIOFIND_DB
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {  # side name args
  local side=$1 name=$2; shift 2; fresh
  local dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout 100 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  grep -m1 step_s $R/fb-$name.log | sed "s/^/$name: /"
}
for r in 1 2; do run_fb before before-$r; run_fb after after-$r; done
run_fb before before-amp --amp; run_fb after after-amp --amp
fresh; (MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 60 python3 prof_first.py) > $R/prof_first.txt 2>&1
head -1 $R/prof_first.txt
for side in before after; do
  dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 150 python3 bench/bench_cold.py --out $R/cold-$side --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 \
     --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout 70) > $R/cold-$side.log 2>&1
  echo "cold $side rc=$?"
done
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
