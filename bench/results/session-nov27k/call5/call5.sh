#!/usr/bin/env bash
# Session nov27k, call 5 (the final code, with the re-timing's log line): the harness and reference GPU tests
# (tests/core/test_timing_gpu.py serially, test_harness.py, test_reference_gpu.py); then compute-sanitizer memcheck
# on the direct and Hopper families' tiny problems, every one each claims (scripts/sanitize --every): each output is
# checked against the float64 reference, whose forward kernels (reference_conv_fwd, and reference_conv_fwd_warp for
# the channels-last FP16 problems of 32+ channels a group) now share one tap loop.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/core/test_timing_gpu.py tests/core/test_harness.py tests/core/test_reference_gpu.py 2>&1 \
  | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -6; save
OUT_SAVE=$OUT
OUT=$R/sanitize TOOLS=memcheck SANITIZE_TIMEOUT=200 timeout 330 scripts/sanitize --families direct,implicit_gemm_hopper --every > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/sanitize.log
OUT=$OUT_SAVE; save
