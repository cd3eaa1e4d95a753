#!/usr/bin/env bash
# Session cw, call 7: the torch, core and tuning GPU tests (the stress test among them) on the final kernels and the
# final shipped DB (784a784), which miofind.torch and the find paths read.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
MIOFIND_STRESS_REPORT=$R/stress.json timeout 330 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  --durations=10 tests/torch tests/core tests/tuning > $R/tests_suite.log 2>&1
echo "suite rc=$? $(( $(date +%s) - T0 )) s: $(grep -E '[0-9]+ passed' $R/tests_suite.log | tail -1)"; grep -E "^(FAILED|ERROR)" $R/tests_suite.log | cut -c1-300 | head
gzip -f $R/stress.json 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r
