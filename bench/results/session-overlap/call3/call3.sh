#!/usr/bin/env bash
set -uo pipefail
OUT=$OUT/suite BENCH=0 XDIST=8 STRESS_SECONDS=5 timeout 580 scripts/gpu-check > /tmp/suite.out 2>&1
echo "rc=$?"
tail -15 /tmp/suite.out
gzip -f $OUT/suite/gpu-tests.log 2>/dev/null
ls $OUT/suite | head -20
