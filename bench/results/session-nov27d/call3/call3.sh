#!/usr/bin/env bash
# Session nov27d, call 3: stored cuDNN plans prepared as NativePlans (no frontend graph or plan built where the plan
# replays natively). (a) GPU tests: the new NativePlan test against the public call, the named-plan replay (its
# verification against the float64 reference now runs the NativePlan), the paths test, prepared solutions' replay,
# miofind.torch's GPU tests; (b) first_ab.py: MobileNetV3-Large AMP's first step in fresh processes, new against old.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 260 python3 -m pytest -q -p no:cacheprovider -n 6 -m gpu tests/torch tests/cudnn/test_cudnn_gpu.py \
  tests/core/test_prepared_gpu.py -k "torch or stored_plan_prepared_natively or named_plan or backend_direct or replayed_call" \
  > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; pack
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/results/session-nov27d/call3/first_ab.py $R/first_ab.json 3 2>&1 \
  | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/first_ab.log
echo "first_ab rc=$? $(( $(date +%s) - T0 )) s"; tail -8 $R/first_ab.log; pack
