#!/usr/bin/env bash
# Session nov27d, call 10: after the review refactor (cudnn_execute.unsupported, NativeRun.trace, one workspace helper):
# the cuDNN GPU tests in full, prepared solutions, the API and miofind.torch.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 480 python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu and not serial" tests/cudnn \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py tests/torch > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; pack
gzip -f $R/tests.log; pack
