#!/usr/bin/env bash
# Session nov27f, call 2: (a) the backend-listing test again (its count threshold was wrong in call 1) and
# bench/cudnn_listing.py; (b) `miofind warmup`, then the warm finds of bench_cold's 30 unseen rows (FP32 NCHW, FP16
# NHWC; bench_cold's warm child, fresh copies of the installed caches per child) with MIOFIND_CUDNN_PREFETCH=off, list
# and build, three rounds in rotating order; (c) ResNet-50's first training step at batch 48 (find_breakdown.py, empty
# user DB, fresh cache copies), FP32 off/list twice and AMP once; (d) MobileNetV3-Large AMP's first step with
# session-nov27e's first_env_ab.py (list against off), 2 rounds.
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
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 60 python3 -m pytest -q -p no:cacheprovider \
  -m gpu tests/cudnn/test_cudnn_gpu.py -k "backend_heuristics" -rA 2>&1 | filt > $R/tests_listing.log
echo "listing tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests_listing.log | tail -4
wait $WPID; tail -1 $R/warmup.log
MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 150 python3 bench/cudnn_listing.py --repeats 5 --busy-repeats 2 --json $R/listing.json \
  > $R/listing.md 2> $R/listing.err
echo "listing bench rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/listing.md; pack
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for s in b.SHAPES for t in ('fp32','fp16') for d in 'FBW']))")
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for round in 1 2 3; do
  case $round in 1) order="off list build";; 2) order="list build off";; 3) order="build off list";; esac
  for v in $order; do
    fresh
    MIOFIND_CUDNN_PREFETCH=$v MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl) $(( $(date +%s) - T0 )) s"
  done
done
python3 bench/results/session-warmfind/call2/ab_summary.py $R off list build > $R/ab_summary.md; sed -n '/geomean/p' $R/ab_summary.md; pack
for run in "off 1" "list 1" "list 2" "off 2" "off amp" "list amp"; do
  set -- $run; fresh
  amp=""; [ $2 = amp ] && amp="--amp"
  MIOFIND_CUDNN_PREFETCH=$1 MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 60 python3 bench/find_breakdown.py --out $R/fb-$1-$2 $amp > $R/fb-$1-$2.json 2> $R/fb-$1-$2.err
  echo "fb $1 $2 rc=$? $(python3 -c "import json;d=json.load(open('$R/fb-$1-$2.json'));print({k:v for k,v in d.items() if not isinstance(v,(dict,list))})" 2>&1 | tail -1) $(( $(date +%s) - T0 )) s"
done
pack
left=$(( 560 - ($(date +%s) - T0) ))
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout $left python3 bench/results/session-nov27e/call4/first_env_ab.py \
  $R/first_ab.json 2 mobilenet_v3_large train32-amp 0 MIOFIND_CUDNN_PREFETCH=off 2>&1 | filt > $R/first_ab.log
echo "first ab rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/first_ab.log
cd $OUT && tar czf r.tgz r
