#!/usr/bin/env bash
# Prepared in session nov27i (NOT RUN: its device time was spent), for the next session. prepared/wrw_cf.patch: the
# float64 reference's channels-first backward weights get reference_conv_wrw_cf (kernels_src/reference_wrw.cu):
# naive_conv_wrw's blocks, a thread walking its output pixels by carries instead of three divisions per pixel (the
# naive kernel runs at 0.39-0.47e12 FLOP/s, call6/r/ref_time_w.md; FP32 W finds spend 4-10 ms in it). Its walk was
# emulated on the CPU (emulate/emulate_ref_wrw_cf.py). Here: applied on the device copy, timed against naive_conv_wrw
# (ref_time_wcf.py), then the reference tests against the GEMM reference, the naive solvers' tests, the find API's.
# If they hold (and it is faster), apply the patch in the repo and set harness.NAIVE_REFERENCE_FLOPS["W"] from the
# times.
set -uo pipefail
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
patch -s -p1 < bench/results/session-nov27i/prepared/wrw_cf.patch && echo "patch applied"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 200 python3 bench/results/session-nov27i/prepared/ref_time_wcf.py > $R/ref_time_wcf.md 2>&1
echo "ref rc=$?"; cat $R/ref_time_wcf.md
MIOFIND_KERNEL_CACHE=/tmp/kc-ref MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 300 python3 -m pytest -q -p no:cacheprovider \
  -n 12 -m "gpu and not serial" tests/core/test_reference_gpu.py tests/direct tests/core/test_api_gpu.py 2>&1 \
  | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$?"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
tar czf $OUT/r.tgz -C $OUT r
