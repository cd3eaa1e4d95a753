#!/usr/bin/env bash
# Session nov27g, call 3: is MIOFIND_CUDNN_PREFETCH=load worth being the default? (a) `miofind warmup` alone; (b) the
# warm finds of bench_cold's 30 unseen rows again, load against build, the order of the arms turned each round (call 2
# always ran build first); (c) what a user's model sees: ResNet-50's first training step at batch 48 (unshipped),
# fresh process, empty user DB, through miofind.torch (bench/find_breakdown.py), FP32 build/load in alternating pairs
# and AMP, then cuDNN benchmark mode's first step in the same set-up (--cudnn) for reference.
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
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep "^warmup\|C++" $R/warmup.log
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for s in b.SHAPES for t in ('fp32','fp16') for d in 'FBW']))")
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for round in 1 2 3 4; do
  case $round in 1|3) order="load build";; *) order="build load";; esac
  for v in $order; do
    fresh
    MIOFIND_CUDNN_PREFETCH=$v MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl) $(( $(date +%s) - T0 )) s"
  done
done
python3 bench/results/session-nov27g/call2/ab_load.py $R build load > $R/ab_load.md; tail -3 $R/ab_load.md; pack
summ() { python3 -c "import json;d=json.load(open('$1'));print('step_s %.2f finds %s find_wall_ms %.0f' % (d['step_s'], d.get('finds'), d.get('find_wall_ms', 0)))" 2>&1 | tail -1; }
for run in "load fp32 1" "build fp32 1" "build fp32 2" "load fp32 2" "load fp32 3" "build fp32 3" "build amp 1" "load amp 1" \
           "load amp 2" "build amp 2"; do
  set -- $run; fresh
  amp=""; [ $2 = amp ] && amp="--amp"
  MIOFIND_CUDNN_PREFETCH=$1 MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 60 python3 bench/find_breakdown.py --out $R/fb-$1-$2-$3 $amp > $R/fb-$1-$2-$3.json 2> $R/fb-$1-$2-$3.err
  echo "fb $1 $2 $3 rc=$? $(summ $R/fb-$1-$2-$3.json) $(( $(date +%s) - T0 )) s"
  [ $(( $(date +%s) - T0 )) -gt 500 ] && break
done
pack
for c in fp32 amp; do
  amp=""; [ $c = amp ] && amp="--amp"
  [ $(( $(date +%s) - T0 )) -gt 540 ] && break
  timeout 40 python3 bench/find_breakdown.py --cudnn --out $R/fb-cudnn-$c $amp > $R/fb-cudnn-$c.json 2> $R/fb-cudnn-$c.err
  echo "fb cudnn $c rc=$? $(summ $R/fb-cudnn-$c.json) $(( $(date +%s) - T0 )) s"
done
cd $OUT && tar czf r.tgz r
