#!/usr/bin/env bash
# Session nov27g, call 4: the GPU tests of call 1 (cuDNN family, prepared replays, tiered finds, miofind.torch) at the
# new default MIOFIND_CUDNN_PREFETCH=load, where every find's miss runs its cuDNN plans once in the prefetch thread.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "from miofind import env; print('MIOFIND_CUDNN_PREFETCH default:', env.cudnn_prefetch())" | tee $R/default.txt
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 230 python3 -m pytest -q -p no:cacheprovider \
  -n 8 -m "gpu and not serial" tests/cudnn tests/core/test_prepared_gpu.py tests/core/test_tiered_gpu.py tests/torch \
  2>&1 | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8
gzip -f $R/tests.log
cd $OUT && tar czf r.tgz r
