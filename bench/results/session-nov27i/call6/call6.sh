#!/usr/bin/env bash
# Session nov27i, call 6: the float64 reference's own backward-weights kernel for channels-last x
# (kernels_src/reference_wrw.cu): its times against naive_conv_wrw on the same inputs (ref_time_w.py), then the
# reference tests against the GEMM reference (every shared shape, direction and layout), the naive solvers' tests and
# the find API's tests.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 200 python3 bench/results/session-nov27i/call6/ref_time_w.py > $R/ref_time_w.md 2>&1
echo "ref rc=$? $(( $(date +%s) - T0 )) s"; cat $R/ref_time_w.md
MIOFIND_KERNEL_CACHE=/tmp/kc-ref MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 300 python3 -m pytest -q -p no:cacheprovider \
  -n 12 -m "gpu and not serial" tests/core/test_reference_gpu.py tests/direct tests/core/test_api_gpu.py 2>&1 \
  | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
tar czf $OUT/r.tgz -C $OUT r
