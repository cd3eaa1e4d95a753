#!/usr/bin/env bash
# Session nov27h, call 11 (NOT RUN: the session's device time was spent; for the next session). The reference's
# backward-data kernel with call10/nhwc_decode.patch: in channels-last layouts (xc == 1) a thread's element is
# decoded with c fastest, so a warp reads consecutive weights, shares its dy reads and stores consecutive dx
# elements (call 8 measured the kernel at 0.45-0.51e12 FLOP/s channels-last against 2.1-3.3e12 channels-first).
# Its index algebra was checked on the CPU by call10/emulate_ref_bwd.py (emulate_ref_bwd.txt: both decodes equal
# miofind.reference's numpy result, NCHW and NHWC, strided, dilated, grouped). Here: the patched kernel's timings
# (ref_bwd.py) and the reference tests against the GEMM reference. If both hold, commit the patch and set
# harness.NAIVE_REFERENCE_B_CHANNELS_LAST_FLOPS from the timings.
set -uo pipefail
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
patch -p1 < bench/results/session-nov27h/call10/nhwc_decode.patch
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 120 python3 bench/results/session-nov27h/call7/ref_bwd.py > $R/ref_bwd.md 2>&1
echo "ref rc=$?"; cat $R/ref_bwd.md
MIOFIND_KERNEL_CACHE=/tmp/kc-ref MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -p no:cacheprovider \
  -n 12 -m "gpu and not serial" tests/core/test_reference_gpu.py 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$?"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8
