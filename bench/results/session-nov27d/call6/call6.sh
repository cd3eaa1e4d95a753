#!/usr/bin/env bash
# Session nov27d, call 6: the cuDNN GPU tests in full (the claim grid against the float64 reference; stored plans
# now prepared as NativePlans where no heuristics graph is cached), prepared solutions and the API's GPU tests; then
# host us per call with the NativePlan's call from Python (native-python) beside the other paths and the DB's
# fastest own solution replayed natively (--own).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 380 python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu and not serial" tests/cudnn \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; pack
timeout 120 python3 bench/bench_cudnn_execute.py --own --calls 2000 --out $R/exec 2>&1 | grep -v "Warn" > $R/exec.log
echo "exec rc=$? $(( $(date +%s) - T0 )) s"; tail -6 $R/exec.log; pack
