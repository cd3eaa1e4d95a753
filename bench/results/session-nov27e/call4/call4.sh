#!/usr/bin/env bash
# Session nov27e, call 4 (after call 3): a find's first cuDNN plans pass over runtime-compiled engines (MIOFIND_CUDNN_DEFER_RTC,
# measured with the later configs). (a) the deferral's GPU test (W at batch 32 now); (b) first_env_ab.py: MobileNetV3-Large AMP's first step and the 20 steps after it, fresh
# processes on an empty user DB, the defaults against MIOFIND_CUDNN_DEFER_RTC=0.
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
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cudnn/test_cudnn_gpu.py -k "wait_for_the_later" -rA \
  > $R/tests_rtc.log 2>&1
echo "rtc tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "deferred|^FAILED|^ERROR|passed|failed" $R/tests_rtc.log | tail -12; pack
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left python3 $D/call4/first_env_ab.py $R/rtc_ab.json 3 mobilenet_v3_large train32-amp 20 MIOFIND_CUDNN_DEFER_RTC=0 \
  2>&1 | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/rtc_ab.log
echo "rtc ab rc=$? $(( $(date +%s) - T0 )) s"; tail -8 $R/rtc_ab.log; pack
