#!/usr/bin/env bash
# The GPU suite's part 1 at the final code of this change (4834e76 plus results): core, cuDNN, depthwise, direct, CLI,
# tuning and torch GPU tests, and the streams-and-threads stress run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
OUT=$OUT/part1 BENCH=0 XDIST=12 timeout 560 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch > $OUT/part1.log 2>&1
echo "rc=$?"; tail -15 $OUT/part1.log
