#!/usr/bin/env bash
# Session nov27i, call 8 (issue 18's first step): as call 3, with the channels-last W reference kernel too:
# ResNet-50's first training step at batch 48 (bench/find_breakdown.py, fresh process, empty user DB, the warmed
# kernel cache copied afresh for each), AMP and FP32, this tree (the float64 reference's own F, B and channels-last W
# kernels) against the tree before them (call8/before.patch reversed: `git diff ef2294b~1 3a097f1 -- miofind solvers
# kernels_src tests`), alternating. `miofind warmup` first where call 7's machine is not the one here.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
if [ ! -f /tmp/site/sqlalchemy/__init__.py ]; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
fi
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && mkdir -p /tmp/before && cp -r miofind solvers kernels_src bench finddb tests /tmp/before/ \
  && (cd /tmp/before && patch -s -R -p1 < $OLDPWD/bench/results/session-nov27i/call8/before.patch) && echo "before tree made"
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
if [ -d /tmp/warm-kc ]; then echo "warm cache from call 7's machine" | tee $R/warmup.log; else
  MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 220 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
  echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; fi
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
summ() { python3 -c "import json;d=json.load(open('$1'));print('step_s %.2f finds %s find_wall_ms %.0f' % (d['step_s'], d.get('finds'), d.get('find_wall_ms', 0)))" 2>&1 | tail -1; }
for run in "after amp 1" "before amp 1" "before amp 2" "after amp 2" "after amp 3" "before amp 3" "before fp32 1" "after fp32 1"; do
  set -- $run; fresh
  dir=$PWD; [ $1 = before ] && dir=/tmp/before
  amp=""; [ $2 = amp ] && amp="--amp"
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 60 python3 bench/find_breakdown.py --out $R/fb-$1-$2-$3 $amp > $R/fb-$1-$2-$3.json 2> $R/fb-$1-$2-$3.err)
  echo "fb $1 $2 $3 rc=$? $(summ $R/fb-$1-$2-$3.json) $(( $(date +%s) - T0 )) s"
  pack
  [ $(( $(date +%s) - T0 )) -gt 530 ] && break
done
pack
