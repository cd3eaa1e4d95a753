#!/usr/bin/env bash
# Session nov27h, call 4: call 3 with the generic spare modules reverted, so the A/B is the harness's hashed inputs
# (verify.HashRNG) alone (change.patch: f8b8741 to 2241f49 in miofind/ and kernels_src/); the before tree also has
# tests/ (bench_cold reads tests/shapes.py, which call 3's lacked).
# (a) `miofind warmup` alone; (b) A/B: bench_cold's warm child per FP32 shape, before against this tree, 4 rounds, the
# arms' order turned each round, fresh copies of the warm caches each process; (c) bench_cold FP32 and FP16 with the
# stamped install cache, the before tree, then this tree.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && mkdir -p /tmp/before && cp -r miofind solvers kernels_src bench finddb tests /tmp/before/ \
  && (cd /tmp/before && patch -s -R -p1 < $OLDPWD/bench/results/session-nov27h/call4/change.patch) && echo "before tree made"
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
filt() { grep -v "leaked\|nanobind\|skipped remainder\|refleaks"; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v "resource_tracker\|warnings.warn" $R/warmup.log | tail -2
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
SHAPES=$(python3 -c "import sys; sys.path.insert(0,'bench'); import bench_cold as b; print(' '.join(b.SHAPES))")
arm() {   # arm round shape
  local tree=$PWD; [ $1 = before ] && tree=/tmp/before
  fresh
  ROWS="[[\"$3\",\"fp32\",\"F\"],[\"$3\",\"fp32\",\"B\"],[\"$3\",\"fp32\",\"W\"]]"
  (cd $tree && PYTHONPATH=$tree:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab \
    CUPY_CACHE_DIR=/tmp/cc-ab timeout 60 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS") \
    >> $R/ab-$1-$2.jsonl 2>> $R/ab-$1-$2.err
}
for round in 1 2 3 4; do
  for s in $SHAPES; do
    if [ $((round % 2)) = 1 ]; then arm before $round $s; arm after $round $s; else arm after $round $s; arm before $round $s; fi
  done
  echo "ab round $round $(( $(date +%s) - T0 )) s rows $(cat $R/ab-before-$round.jsonl | grep -c '^{') $(cat $R/ab-after-$round.jsonl | grep -c '^{')"
done
python3 bench/results/session-nov27h/call2/ab_summary.py $R > $R/ab_summary.md; cat $R/ab_summary.md; pack
for tree in before after; do
  dir=$PWD; [ $tree = before ] && dir=/tmp/before
  [ $(( 585 - ($(date +%s) - T0) )) -lt 110 ] && { echo "cold $tree skipped: time"; continue; }
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 200 python3 bench/bench_cold.py --out $R/cold-$tree --installed-cache /tmp/warm-kc \
    --installed-cupy-cache /tmp/warm-cupy --timeout 90 > $R/cold-$tree.log 2>&1)
  echo "cold $tree rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold-$tree/bench_cold.md
  pack
done
