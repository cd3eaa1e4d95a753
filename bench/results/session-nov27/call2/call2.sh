#!/usr/bin/env bash
# Session nov27, call 2: the GPU suite at this commit, part 1 of 2 (every family but the Hopper one, and the torch
# tests): scripts/gpu-check with the benchmarks off and 16 workers, then its serial pass (the timing tests).
set -uo pipefail
R=$OUT/r; mkdir -p $R
BENCH=0 XDIST=16 OUT=$R timeout 570 scripts/gpu-check tests/cli tests/core tests/cudnn tests/depthwise tests/direct \
  tests/fft tests/gemm tests/implicit_gemm tests/implicit_gemm_small_c tests/winograd tests/tuning > $R/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -8 $R/gpu-check.log
tar czf $OUT/r.tgz -C $OUT r
