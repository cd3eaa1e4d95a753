#!/usr/bin/env bash
# Session nov27e, call 2: (a) plan_build_ab.py: the build cost of the first two cuDNN plans of MobileNetV2's FP16 NHWC
# problems (90, F/B/W, batch 32) through the frontend's graph against NativePlans, one process per arm, in the order
# frontend, native, native, frontend; (b) call 1's first_ab.py, three more rounds on MobileNetV3-Large AMP.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
D=bench/results/session-nov27e
i=0
for arm in frontend native native frontend; do
  i=$((i+1))
  timeout 120 python3 $D/call2/plan_build_ab.py $arm $R/build_${i}_$arm.json mobilenet_v2 2>&1 | grep -v "leaked\|nanobind\|refleaks" | tail -2
done
echo "builds $(( $(date +%s) - T0 )) s"; pack
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 $D/call1/first_ab.py $R/first_ab_v3.json 3 mobilenet_v3_large train32-amp 2>&1 \
  | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/first_ab_v3.log
echo "first_ab v3 rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/first_ab_v3.log; pack
