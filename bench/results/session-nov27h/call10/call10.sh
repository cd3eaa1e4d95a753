#!/usr/bin/env bash
# Session nov27h, call 10 (NOT RUN: the session's device time was spent; for the next session). The float64
# reference's own backward-data kernel (ef2294b, its estimate 72d7bca) on what call 7-9 did not reach:
# (a) `miofind warmup` alone; (b) the naive solvers' GPU tests (tests/direct) and the reference tests;
# (c) ResNet-50's first training step at batch 48 (bench/find_breakdown.py, fresh process, empty user DB), FP32 and
#     AMP, this tree against the tree before the change (change.patch reversed in /tmp/before), alternating;
# (d) a second bench_cold run at this tree, to settle call 9's 14 of 15 warm FP32 rows.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && mkdir -p /tmp/before && cp -r miofind solvers kernels_src bench finddb tests /tmp/before/ \
  && (cd /tmp/before && patch -s -R -p1 < $OLDPWD/bench/results/session-nov27h/call10/change.patch) && echo "before tree made"
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 220 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v "resource_tracker\|warnings.warn" $R/warmup.log | tail -2
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 120 \
  python3 -m pytest -q -p no:cacheprovider -n 12 -m "gpu and not serial" tests/direct tests/core/test_reference_gpu.py 2>&1 \
  | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; pack
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
summ() { python3 -c "import json;d=json.load(open('$1'));print('step_s %.2f finds %s find_wall_ms %.0f' % (d['step_s'], d.get('finds'), d.get('find_wall_ms', 0)))" 2>&1 | tail -1; }
for run in "after fp32 1" "before fp32 1" "before amp 1" "after amp 1" "after fp32 2" "before fp32 2"; do
  set -- $run; fresh
  dir=$PWD; [ $1 = before ] && dir=/tmp/before
  amp=""; [ $2 = amp ] && amp="--amp"
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 60 python3 bench/find_breakdown.py --out $R/fb-$1-$2-$3 $amp > $R/fb-$1-$2-$3.json 2> $R/fb-$1-$2-$3.err)
  echo "fb $1 $2 $3 rc=$? $(summ $R/fb-$1-$2-$3.json) $(( $(date +%s) - T0 )) s"
  [ $(( $(date +%s) - T0 )) -gt 420 ] && break
done
pack
left=$(( 585 - ($(date +%s) - T0) ))
if [ $left -gt 110 ]; then
  timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
    --timeout 90 > $R/cold.log 2>&1
  echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
fi
pack
