#!/usr/bin/env bash
# Session nov28c, call 5: the GPU suite's part 1 (tests/core, tests/cli, tests/tuning, tests/torch, with the stress test)
# at the session's code: the find rule (the system DB vouches for the solvers it holds records of) and the two swap
# solvers among every find's candidates.
set -uo pipefail
mkdir -p $OUT/part1
OUT=$OUT/part1 BENCH=0 COLD=0 XDIST=14 timeout 560 scripts/gpu-check tests/core tests/cli tests/tuning tests/torch > $OUT/part1/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -n 25 $OUT/part1/gpu-check.log | cut -c1-250
gzip -f $OUT/part1/*.log 2>/dev/null; ls $OUT/part1 | head -20
