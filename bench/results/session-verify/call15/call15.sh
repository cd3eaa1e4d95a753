#!/usr/bin/env bash
# Session verify, call 15: the GPU suite's part 1 at the session's final library code (093743b; since call 1 only
# find.py's workspace-under-a-limit change, 0219acf), with the stress test once more alone.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=1 timeout 300 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
grep -a -E '^stress:' $R/part1/stress.log | cut -c1-300
gzip -f $R/part1/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
