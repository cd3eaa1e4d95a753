#!/usr/bin/env bash
# Session suite, call 2 (the same host as call 1): the GPU suite's part 2 (FFT, GEMM with the bridge kernel,
# implicit GEMM, the Hopper family, Winograd) at the session's final code.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
OUT=$R/part2 BENCH=0 XDIST=14 timeout 520 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm tests/implicit_gemm_hopper \
  tests/winograd > $R/part2.log 2>&1
echo "part2 rc=$?"; sed -n '/== summary ==/,$p' $R/part2.log; grep -E "^(FAILED|ERROR)" $R/part2/gpu-tests.log | head
gzip -f $R/part2/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
