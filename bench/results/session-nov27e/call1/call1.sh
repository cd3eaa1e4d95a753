#!/usr/bin/env bash
# Session nov27e, call 1: a find's cuDNN plans built as NativePlans through the backend API (the winner's native replay
# reuses the plan the find timed instead of compiling it again). (a) GPU tests: the note filter against the frontend's,
# the winner built once, every cuDNN GPU test, prepared solutions, the API, miofind.torch; (b) first_ab.py: a fresh
# process's first step on an empty user DB, new against old (MIOFIND_BENCH_NATIVE_FIND=0), MobileNetV3-Large AMP
# (34 finds), two rounds, then a profiled pair.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
D=bench/results/session-nov27e/call1
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cudnn/test_cudnn_gpu.py \
  -k "note_filter or built_once" -rA > $R/tests_new.log 2>&1
echo "new tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests_new.log | tail -12; pack
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu and not serial" tests/cudnn \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py tests/torch > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; pack
gzip -f $R/tests.log
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 $D/first_ab.py $R/first_ab_v3.json 2 mobilenet_v3_large train32-amp $R/prof 2>&1 \
  | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/first_ab_v3.log
echo "first_ab v3 rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/first_ab_v3.log; pack
