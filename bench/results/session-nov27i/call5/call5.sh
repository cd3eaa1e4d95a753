#!/usr/bin/env bash
# Session nov27i, call 5: the GPU suite at this session's code, part 2 of 2: scripts/gpu-check on the Hopper family's
# tests and the torch tests, the benchmarks off, 16 workers.
set -uo pipefail
R=$OUT/r; mkdir -p $R
BENCH=0 COLD=0 XDIST=16 OUT=$R timeout 585 scripts/gpu-check tests/implicit_gemm_hopper tests/torch > $R/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -8 $R/gpu-check.log
gzip -f $R/gpu-tests.log 2>/dev/null
tar czf $OUT/r.tgz -C $OUT r
