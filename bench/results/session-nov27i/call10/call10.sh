#!/usr/bin/env bash
# Session nov27i, call 10, at the session's final reference code (ea6219f): `miofind warmup`; bench/bench_cold.py;
# then ResNet-50's first training step at batch 48 (bench/find_breakdown.py, fresh process, empty user DB, the warmed
# kernel cache copied afresh for each), AMP then FP32, this tree against the tree before the reference kernels
# (call10/before.patch reversed: `git diff ef2294b~1 ea6219f -- miofind solvers kernels_src tests`), alternating.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && mkdir -p /tmp/before && cp -r miofind solvers kernels_src bench finddb tests /tmp/before/ \
  && (cd /tmp/before && patch -s -R -p1 < $OLDPWD/bench/results/session-nov27i/call10/before.patch) && echo "before tree made"
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 220 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"
timeout 150 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
pack
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
summ() { python3 -c "import json;d=json.load(open('$1'));print('step_s %.2f finds %s find_wall_ms %.0f' % (d['step_s'], d.get('finds'), d.get('find_wall_ms', 0)))" 2>&1 | tail -1; }
for run in "before amp 1" "after amp 1" "after amp 2" "before amp 2" "after fp32 1" "before fp32 1"; do
  [ $(( $(date +%s) - T0 )) -gt 530 ] && break
  set -- $run; fresh
  dir=$PWD; [ $1 = before ] && dir=/tmp/before
  amp=""; [ $2 = amp ] && amp="--amp"
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 55 python3 bench/find_breakdown.py --out $R/fb-$1-$2-$3 $amp > $R/fb-$1-$2-$3.json 2> $R/fb-$1-$2-$3.err)
  echo "fb $1 $2 $3 rc=$? $(summ $R/fb-$1-$2-$3.json) $(( $(date +%s) - T0 )) s"
  pack
done
pack
