#!/usr/bin/env bash
# Session nov27g, call 2. (a) `miofind warmup` alone first (call 1 ran it beside the GPU tests and its 170 s limit cut
# it short, so call 1's empty-cache rows compiled what the install had not: not a fresh-install figure); (b) the GPU
# tests of MIOFIND_CUDNN_PREFETCH=load (cudnn_base.first_runs) and the env test; (c) warm finds of bench_cold's 30
# unseen rows (FP32 NCHW, FP16 NHWC), MIOFIND_CUDNN_PREFETCH=build against load, one process per arm and round, three
# rounds alternating; (d) bench_cold FP32 and FP16 at the default (build) with the full install cache.
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
git rev-parse HEAD > $R/commit.txt 2>/dev/null
pack() { tar czf $OUT/r.tgz -C $OUT r; }
filt() { grep -v "leaked\|nanobind\|skipped remainder\|refleaks"; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v resource_tracker $R/warmup.log | grep -v warnings.warn | tail -3
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 120 \
  python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu tests/cudnn/test_cudnn_gpu.py -k "prefetch or first_runs" \
  tests/cli/test_env.py 2>&1 | filt > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8
pack
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for s in b.SHAPES for t in ('fp32','fp16') for d in 'FBW']))")
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for round in 1 2 3; do
  for v in build load; do
    fresh
    MIOFIND_CUDNN_PREFETCH=$v MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl) $(( $(date +%s) - T0 )) s"
  done
done
python3 bench/results/session-nov27g/call2/ab_load.py $R build load > $R/ab_load.md; tail -3 $R/ab_load.md; pack
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
cd $OUT && tar czf r.tgz r
