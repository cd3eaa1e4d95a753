#!/usr/bin/env bash
# Issue 18 (call 1, diagnosis): where a warm-cache find of an unseen FP32 layer spends its wall time. `miofind
# warmup`, then bench_cold on the five unseen layers in FP32 (F/B/W; warm and empty caches, torch's first calls),
# with the finer breakdown (select / setup / configs / measure / other), then the same warm finds under cProfile.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
R=$OUT/r1; mkdir -p $R
export PYTHONPATH=$PWD:/tmp/site
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
timeout 200 python3 bench/bench_cold.py --out $R/cold --dtypes fp32 --installed-cache /tmp/warm-kc \
  --installed-cupy-cache /tmp/warm-cupy --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$?"; sed -n '/^| layer/,$p' $R/cold/bench_cold.md
BENCH_COLD_PROFILE=$R/prof timeout 150 python3 bench/bench_cold.py --out $R/cold-prof --dtypes fp32 \
  --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 60 > $R/cold-prof.log 2>&1
echo "cold-prof rc=$?"; ls $R/prof | head -30
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
