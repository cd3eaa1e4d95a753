#!/usr/bin/env bash
# Session nov27d, call 7: the GPU suite's folders this session's code touches, at the final code: the depthwise
# family (its config ranking now computes each candidate's geometry once), miofind.torch (the host-aware choice's
# native cuDNN charge, NativePlans under DB hits), core (prepared solutions, API, stress) and tuning.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
timeout 560 python3 -m pytest -q -p no:cacheprovider -n 14 -m "gpu and not serial" tests/depthwise tests/torch tests/core \
  tests/tuning > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -15
gzip -f $R/tests.log; tar czf $OUT/r.tgz -C $OUT r
