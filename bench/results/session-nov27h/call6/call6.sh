#!/usr/bin/env bash
# Session nov27h, call 6: call 5 found that a module load waits for every GPU kernel in flight. A warm find queues its
# harness's inputs and float64 reference first and then loads its candidates' modules, so those loads wait for the
# reference. A/B: this tree ("before") against the same with late.patch ("late": the harness made after the
# candidates are prepared, its reference computed then); bench_cold's warm child per FP32 shape, 5 rounds, the arms'
# order turned each round, fresh copies of the warm caches each process.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/late && mkdir -p /tmp/late && cp -r miofind solvers kernels_src bench finddb tests /tmp/late/ \
  && (cd /tmp/late && patch -s -p1 < $OLDPWD/bench/results/session-nov27h/call6/late.patch) && echo "late tree made"
python3 -m compileall -q -j 16 miofind solvers bench /tmp/late > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
filt() { grep -v "leaked\|nanobind\|skipped remainder\|refleaks"; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v "resource_tracker\|warnings.warn" $R/warmup.log | tail -2
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
SHAPES=$(python3 -c "import sys; sys.path.insert(0,'bench'); import bench_cold as b; print(' '.join(b.SHAPES))")
arm() {   # arm round shape
  local tree=$PWD; [ $1 = after ] && tree=/tmp/late
  fresh
  ROWS="[[\"$3\",\"fp32\",\"F\"],[\"$3\",\"fp32\",\"B\"],[\"$3\",\"fp32\",\"W\"]]"
  (cd $tree && PYTHONPATH=$tree:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab \
    CUPY_CACHE_DIR=/tmp/cc-ab timeout 60 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS") \
    >> $R/ab-$1-$2.jsonl 2>> $R/ab-$1-$2.err
}
for round in 1 2 3 4 5; do
  for s in $SHAPES; do
    if [ $((round % 2)) = 1 ]; then arm before $round $s; arm after $round $s; else arm after $round $s; arm before $round $s; fi
  done
  echo "ab round $round $(( $(date +%s) - T0 )) s rows $(cat $R/ab-before-$round.jsonl | grep -c '^{') $(cat $R/ab-after-$round.jsonl | grep -c '^{')"
done
python3 bench/results/session-nov27h/call2/ab_summary.py $R > $R/ab_summary.md; cat $R/ab_summary.md; pack
pack
