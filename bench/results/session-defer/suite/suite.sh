#!/usr/bin/env bash
# The whole GPU suite in one call, in two parts with their own limits (as session-overlap/suite1, suite2).
set -uo pipefail
BASE=$OUT
OUT=$BASE/p1 BENCH=0 XDIST=12 STRESS_SECONDS=5 timeout 280 scripts/gpu-check tests/core tests/cudnn tests/depthwise \
  tests/direct tests/cli tests/tuning tests/torch 2>&1 | tail -4
OUT=$BASE/p2 BENCH=0 XDIST=12 timeout 290 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd 2>&1 | tail -4
for p in p1 p2; do gzip -f $BASE/$p/gpu-tests.log; done
cd $BASE && tar czf suite.tgz p1 p2 && rm -rf p1 p2
