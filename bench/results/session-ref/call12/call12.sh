#!/usr/bin/env bash
# The GPU suite's part 1 (core, cudnn, depthwise, direct, cli, tuning, torch) again at 3c4dba0 (cuDNN's configs_now 2).
# Result: 1625 passed, 31 skipped (-m big) in 149 s; stress 6550 runs, 0 mismatches, 0 errors.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
R=$OUT/r12; mkdir -p $R
OUT=$R/p1 BENCH=0 XDIST=12 timeout 540 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch 2>&1 | tail -8
gzip -f $R/p1/gpu-tests.log
cd $OUT && tar czf r12.tgz r12 && rm -rf r12
