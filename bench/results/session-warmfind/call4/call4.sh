#!/usr/bin/env bash
# Issue 18 (call 4): the warm-find changes of session-warmfind (the FFT tile ranking over numpy, the GEMM reference
# only where it beats the naive kernel's estimate by its per-tap host time, binary_key memoised) against the code
# before them ("before": ab.patch = `git diff e30458b <commit> -- miofind solvers` reversed). GPU tests of what they
# touch; `miofind warmup`; A/B of the warm finds of the 15 unseen FP32 rows (one child per variant and round, fresh
# copies of the installed caches, three alternating rounds); then bench_cold (FP32 and FP16, warm and empty caches,
# torch's first calls) and ResNet-50's first FP32 training step at batch 48, at the new code.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-warmfind/call4
rm -rf /tmp/v0 && cp -r . /tmp/v0 && (cd /tmp/v0 && patch -s -R -p1 < $D/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/v0/miofind /tmp/v0/solvers /tmp/v0/bench > /dev/null 2>&1
R=$OUT/r4; mkdir -p $R
export PYTHONPATH=$PWD:/tmp/site
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1 &
WPID=$!
MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 150 python3 -m pytest -q -m gpu \
  -p no:cacheprovider -n 8 tests/core/test_reference_gpu.py tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py \
  tests/core/test_harness.py tests/fft/test_fft_generic_gpu.py > $R/tests.log 2>&1
tail -1 $R/tests.log
wait $WPID; tail -2 $R/warmup.log
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,'fp32',d] for s in b.SHAPES for d in 'FBW']))")
for round in 1 2 3; do
  for v in v0 v3; do
    dir=$PWD; [ $v = v0 ] && dir=/tmp/v0
    rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab
    (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab \
      CUPY_CACHE_DIR=/tmp/cc-ab timeout 120 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS") \
      > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl)"
  done
done
python3 bench/results/session-warmfind/call2/ab_summary.py $R v0 v3 > $R/ab_summary.md; head -19 $R/ab_summary.md
timeout 240 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 --resnet50 > $R/cold.log 2>&1
echo "cold rc=$?"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md; sed -n '/^| config/,$p' $R/cold/bench_cold.md
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
