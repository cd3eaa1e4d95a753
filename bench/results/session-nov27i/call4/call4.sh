#!/usr/bin/env bash
# Session nov27i, call 4: the GPU suite at this session's code (the float64 reference's own F and B kernels, which
# verify every solver), part 1 of 2 (every family but the Hopper one, and the torch tests): scripts/gpu-check with
# the benchmarks off and 16 workers, then its serial pass (the timing tests).
set -uo pipefail
R=$OUT/r; mkdir -p $R
BENCH=0 COLD=0 XDIST=16 OUT=$R timeout 580 scripts/gpu-check tests/cli tests/core tests/cudnn tests/depthwise tests/direct \
  tests/fft tests/gemm tests/implicit_gemm tests/implicit_gemm_small_c tests/winograd tests/tuning > $R/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -8 $R/gpu-check.log
gzip -f $R/gpu-tests.log 2>/dev/null
tar czf $OUT/r.tgz -C $OUT r
