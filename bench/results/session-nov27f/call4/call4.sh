#!/usr/bin/env bash
# Session nov27f, call 4 (final code: the listing carries each engine's notes, so plans a problem's contract excludes
# are known without a build; every BackendPlan built in one C call, miofind._native.cudnn_plan_build, the GIL
# released): (a) the cuDNN family's GPU tests, prepared replays, the API and tiered finds (every native plan now built
# through the C call); (b) `miofind warmup`, then the warm finds of bench_cold's 30 unseen rows, MIOFIND_CUDNN_PREFETCH
# off against build (default), three rounds alternating; (c) bench_cold (warm and empty caches, torch's benchmark-mode
# first calls in the same run).
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
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -p no:cacheprovider \
  -n 8 -m "gpu and not serial" tests/cudnn tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py 2>&1 | filt > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8
gzip -f $R/tests.log; pack
wait $WPID; tail -1 $R/warmup.log
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for s in b.SHAPES for t in ('fp32','fp16') for d in 'FBW']))")
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for round in 1 2 3; do
  order="off build"; [ $round = 2 ] && order="build off"
  for v in $order; do
    fresh
    MIOFIND_CUDNN_PREFETCH=$v MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl) $(( $(date +%s) - T0 )) s"
  done
done
python3 bench/results/session-warmfind/call2/ab_summary.py $R off build > $R/ab_summary.md; sed -n '/geomean/p' $R/ab_summary.md; pack
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
cd $OUT && tar czf r.tgz r
