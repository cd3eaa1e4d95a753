#!/usr/bin/env bash
# Session nov27i, call 9: the float64 reference's warp-per-output forward kernel for channels-last x and w with at
# least 32 channels a group (kernels_src/reference_fwd.cu): its times against the thread-per-output kernel
# (ref_time_f.py), then the reference tests against the GEMM reference (every shared shape, direction and layout, and
# the wide groups that take the warp kernel), the naive solvers' tests and the find API's tests.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 200 python3 bench/results/session-nov27i/call9/ref_time_f.py > $R/ref_time_f.md 2>&1
echo "ref rc=$? $(( $(date +%s) - T0 )) s"; cat $R/ref_time_f.md
MIOFIND_KERNEL_CACHE=/tmp/kc-ref MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 300 python3 -m pytest -q -p no:cacheprovider \
  -n 12 -m "gpu and not serial" tests/core/test_reference_gpu.py tests/direct tests/core/test_api_gpu.py 2>&1 \
  | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
tar czf $OUT/r.tgz -C $OUT r
