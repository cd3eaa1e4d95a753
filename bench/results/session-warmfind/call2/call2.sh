#!/usr/bin/env bash
# Issue 18 (call 2, diagnosis): diag.py in warm processes (kernel cache from `miofind warmup`, one untimed find of
# another shape first): each FP32 and FP16 unseen layer's find, function by function, then cuDNN's plans (graph,
# build, behaviour notes, first and second execution). The kernel cache comes carried (.whl/kc.tar.xz, built by
# `miofind warmup --arch sm_90 --no-device` on the CPU host); warmup then compiles only what that lacks.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
R=$OUT/r2; mkdir -p $R
export PYTHONPATH=$PWD:/tmp/site
mkdir -p /tmp/warm-kc && chmod 700 /tmp/warm-kc && [ -f .whl/kc.tar.xz ] && tar xJf .whl/kc.tar.xz -C /tmp/warm-kc
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
D=bench/results/session-warmfind/call2
for dt in fp32 fp16; do
  MIOFIND_DB=sqlite:////tmp/diag-$dt.sqlite MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 \
    python3 $D/diag.py $R/diag-$dt.json $dt > $R/diag-$dt.log 2>&1
  echo "diag $dt rc=$?"; cat $R/diag-$dt.log | cut -c1-600
done
# A/B: v0 = before both changes (the FFT ranking and cuDNN's prefetch reversed), v1 = the FFT ranking only,
# v2 = both; one child per variant and round, each on a fresh copy of the installed kernel cache, the 15 FP32
# rows after one untimed find of the warm-up shape, variants alternating, three rounds
rm -rf /tmp/v1 /tmp/v0 && cp -r . /tmp/v1 && (cd /tmp/v1 && patch -s -R -p1 < $D/ab-prefetch.patch) && cp -r /tmp/v1 /tmp/v0 \
  && (cd /tmp/v0 && patch -s -R -p1 < $D/ab-fft.patch) || exit 1
python3 -m compileall -q -j 16 /tmp/v0/miofind /tmp/v0/solvers /tmp/v1/miofind /tmp/v1/solvers > /dev/null 2>&1
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,'fp32',d] for s in b.SHAPES for d in 'FBW']))")
for round in 1 2 3; do
  for v in v0 v1 v2; do
    dir=$PWD; [ $v != v2 ] && dir=/tmp/$v
    rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab
    (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab \
      CUPY_CACHE_DIR=/tmp/cc-ab timeout 120 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS") \
      > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl)"
  done
done
python3 $D/ab_summary.py $R v0 v1 v2 | tee $R/ab_summary.md | head -24
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
