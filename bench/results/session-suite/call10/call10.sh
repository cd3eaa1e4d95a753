#!/usr/bin/env bash
# Session suite, call 10: the GPU suite's part 1 at the final code (c17dd11's code: after call 7's part 1, the Python
# launch path through libcuda and device.driver()'s removal changed).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
OUT=$R/part1 BENCH=0 XDIST=14 timeout 300 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
gzip -f $R/part1/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
