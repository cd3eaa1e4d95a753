#!/usr/bin/env bash
# Session nov27k, call 6 (the final code): the GPU suites of the families not run in calls 2, 3 and 5 (Winograd, FFT,
# depthwise, cuDNN, implicit GEMM, small-C, Hopper), whose finds and verifications go through the harness's timing.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 540 python3 -m pytest -q -p no:cacheprovider -n 15 -m "gpu and not serial and not big" \
  tests/winograd tests/fft tests/depthwise tests/cudnn tests/implicit_gemm tests/implicit_gemm_small_c \
  tests/implicit_gemm_hopper 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; save
