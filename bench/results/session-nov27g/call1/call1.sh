#!/usr/bin/env bash
# Session nov27g, call 1 (session nov27f's unrun call 5). What the last commits
# changed without a GPU run, and the measurements call 4 left open:
# (a) GPU tests: the cuDNN family, prepared replays (their side-stream and capture cases run a frontend-built plan's
#     native runs, which now share the first stream's finalized plan), the tiered finds (a background thread's work
#     beside another thread's capture), miofind.torch;
# (b) bench_cold with torch's first calls per layer and type (d3d706e), then the old single torch process
#     (--torch-one-process), to see what the asymmetry was worth;
# (c) the same warm-find A/B as call 4 with CUDA_MODULE_LOADING=EAGER (does the first run of eng50 / eng67 / eng18
#     go away, and what does the process start pay);
# (d) MobileNetV3-Large AMP's first step, MIOFIND_CUDNN_PREFETCH=build against off (session-nov27e's
#     first_env_ab.py), one round, as long as the limit allows.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
filt() { grep -v "leaked\|nanobind\|skipped remainder\|refleaks"; }
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 170 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1 &
WPID=$!
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 200 python3 -m pytest -q -p no:cacheprovider \
  -n 8 -m "gpu and not serial" tests/cudnn tests/core/test_prepared_gpu.py tests/core/test_tiered_gpu.py tests/torch \
  2>&1 | filt > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8
gzip -f $R/tests.log; pack
wait $WPID; tail -1 $R/warmup.log
timeout 200 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --dtypes fp32 --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md; pack
timeout 150 python3 bench/bench_cold.py --out $R/cold1 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --dtypes fp32 --timeout 90 --torch-one-process > $R/cold1.log 2>&1
echo "cold one-process rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold1/bench_cold.md; pack
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,'fp32',d] for s in b.SHAPES for d in 'FBW']))")
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for round in 1 2; do
  for v in lazy eager; do
    fresh
    CUDA_MODULE_LOADING=${v^^} MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl) $(( $(date +%s) - T0 )) s"
  done
done
python3 bench/results/session-warmfind/call2/ab_summary.py $R lazy eager > $R/ab_summary.md; sed -n '/geomean/p' $R/ab_summary.md; pack
left=$(( 570 - ($(date +%s) - T0) ))
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout $left python3 bench/results/session-nov27e/call4/first_env_ab.py \
  $R/first_ab.json 1 mobilenet_v3_large train32-amp 0 MIOFIND_CUDNN_PREFETCH=off 2>&1 | filt > $R/first_ab.log
echo "first ab rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/first_ab.log
cd $OUT && tar czf r.tgz r
