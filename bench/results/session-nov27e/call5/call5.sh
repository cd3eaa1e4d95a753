#!/usr/bin/env bash
# Session nov27e, call 5 (final code): one finalized cuDNN plan per NativePlan for every stream (cudnn_run sets the
# context's stream on the device's handle under its lock), MIOFIND_CUDNN_DEFER_RTC off by default. (a) GPU tests: the
# cuDNN family, prepared solutions, the API, tiered finds, miofind.torch; (b) host us per call of the native replays
# (bench_cudnn_execute.py --own); (c) call 4's first_env_ab.py: MobileNetV3-Large AMP's first step, 20 steps, the
# background drained and ten steady steps, a find's plans built as NativePlans (new) against the frontend's graph
# (MIOFIND_BENCH_NATIVE_FIND=0).
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
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu and not serial" tests/cudnn tests/core/test_prepared_gpu.py \
  tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/torch > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; pack
gzip -f $R/tests.log
timeout 90 python3 bench/bench_cudnn_execute.py --own --calls 2000 --out $R/exec 2>&1 | grep -v "Warn" > $R/exec.log
echo "exec rc=$? $(( $(date +%s) - T0 )) s"; tail -12 $R/exec.log; pack
left=$(( 420 - ($(date +%s) - T0) ))
timeout $left python3 $D/call4/first_env_ab.py $R/native_ab.json 2 mobilenet_v3_large train32-amp 20 MIOFIND_BENCH_NATIVE_FIND=0 \
  2>&1 | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/native_ab.log
echo "native ab rc=$? $(( $(date +%s) - T0 )) s"; tail -6 $R/native_ab.log; pack
