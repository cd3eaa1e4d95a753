#!/usr/bin/env bash
# Session nov27k, call 7b: the harness with the lowered switch interval around verification and timing (prompt_gil):
# the timing tests serially (among them the new busy-thread test), then the harness, API, tiered (background builds
# beside timing) and tuning GPU tests in parallel.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 120 python3 -m pytest -q -p no:cacheprovider -m "gpu and serial" \
  tests/core/test_timing_gpu.py 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests_serial.log
echo "serial rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests_serial.log | tail -6; save
MIOFIND_DB=sqlite:////tmp/t-user2.sqlite timeout 300 python3 -m pytest -q -p no:cacheprovider -n 14 -m "gpu and not serial" \
  tests/core/test_timing_gpu.py tests/core/test_harness.py tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/tuning \
  2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -6; save
