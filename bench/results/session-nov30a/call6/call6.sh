#!/usr/bin/env bash
# Session nov30a, call 6 (any sm_90; an H200): the GPU tests session nov29j's final review moved onto
# gpu_helpers.check_configs (test_row64.py, test_bn32.py, test_tma_padded.py) and could not re-run for lack of device
# time; the FFT family's and the find's GPU tests at this session's code (the cuFFT plan prefetch), and the API finds.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite CUPY_CACHE_DIR=/tmp/cupy6
timeout 330 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  tests/implicit_gemm_hopper/test_bn32.py tests/implicit_gemm_hopper/test_tma_padded.py > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_hopper.log; grep -E " FAILED| ERROR" $R/tests_hopper.log | head; tail -1 $R/tests_hopper.log
save
timeout 200 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/fft tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py \
  > $R/tests_fft.log 2>&1
echo "fft/api tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_fft.log; grep -E " FAILED| ERROR" $R/tests_fft.log | head; tail -1 $R/tests_fft.log
gzip -f $R/*.log; save; echo "all $(el) s"
