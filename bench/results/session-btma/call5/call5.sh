#!/usr/bin/env bash
# Issue 19 (call 5), with call 3's shipped DB: the whole GPU suite (scripts/gpu-check, no benchmarks), every family,
# the stress test included.
set -uo pipefail
OUT=$OUT/suite BENCH=0 XDIST=12 STRESS_SECONDS=5 timeout 560 scripts/gpu-check > $OUT/suite-out.log 2>&1
echo "gpu-check rc=$?"; tail -4 $OUT/suite/gpu-tests.log; grep -E "^FAILED|^ERROR" $OUT/suite/gpu-tests.log | head -20
