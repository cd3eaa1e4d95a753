#!/usr/bin/env bash
# Session nov27k, call 7: gil.py (the switch interval while timing), then the harness and timing GPU tests with it.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 bench/results/session-nov27k/call7/gil.py > $R/gil.txt 2>&1
echo "gil rc=$? $(( $(date +%s) - T0 )) s"; cat $R/gil.txt; save
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/core/test_timing_gpu.py tests/core/test_harness.py 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -6; save
