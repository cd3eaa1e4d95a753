#!/usr/bin/env bash
# Session check, call 11, at 17a6a6f: what device timing costs a find of an unseen layer (issue 18's warm finds):
# `miofind warmup`, then bench_cold's warm child on its 30 rows (FP32 NCHW and FP16 NHWC, F/B/W) with
# MIOFIND_FIND_TIMING=wall and device, one process per arm and round, fresh copies of the installed caches, three
# alternating rounds (session-verify call 6's A/B, its summary scripts).
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1; tail -1 $R/warmup.log
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for t in ('fp32','fp16') for s in b.SHAPES for d in 'FBW']))")
for round in 1 2 3; do
  for v in wall device; do
    rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab
    MIOFIND_FIND_TIMING=$v MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl)"
  done
done
python3 bench/results/session-verify/call3/ab_summary.py $R wall device > $R/ab_summary.md; head -40 $R/ab_summary.md
python3 bench/results/session-verify/call6/ab_best.py $R wall device > $R/ab_best.md; tail -3 $R/ab_best.md
gzip -f $R/*.jsonl
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
