#!/usr/bin/env bash
# Session nov27d, call 5: call 3's first-step A/B (stored cuDNN plans as NativePlans, new, against through the
# frontend's graph, old) on ResNet-50 and Inception-v3 AMP training at batch 32 (shipped DB, empty user DB, then a
# second process on it).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
for m in resnet50 inception_v3; do
  left=$(( 290 * ( $([ $m = resnet50 ] && echo 1 || echo 2) ) - ($(date +%s) - T0) ))
  timeout $left python3 bench/results/session-nov27d/call3/first_ab.py $R/first_ab_$m.json 3 $m train32-amp 2>&1 \
    | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/first_ab_$m.log
  echo "$m rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/first_ab_$m.log
  tar czf $OUT/r.tgz -C $OUT r
done
