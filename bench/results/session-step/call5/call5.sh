#!/usr/bin/env bash
# The GPU suite's part 2 at the final code of this change: FFT, GEMM, implicit GEMM (Ampere and Hopper) and Winograd.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
OUT=$OUT/part2 BENCH=0 XDIST=14 timeout 570 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd > $OUT/part2.log 2>&1
echo "rc=$?"; tail -6 $OUT/part2.log
