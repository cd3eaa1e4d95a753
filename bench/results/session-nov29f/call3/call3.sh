#!/usr/bin/env bash
# Session nov29f, call 3 (any sm_90; an H200): the 11 GPU tests of part 2 that were still running when call 2 reached
# its limit (call3/remaining.txt: the collected gpu tests of part 2's paths less those call 2's log reports), in 11
# workers; beside them, scripts/sanitize over every solver family (compute-sanitizer racecheck and memcheck on each
# solver's tiny problem on a side stream).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/gpucheck/finddb.sqlite
mkdir -p /tmp/gpucheck
( OUT=$R/sanitize SANITIZE_TIMEOUT=420 timeout 500 scripts/sanitize > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s" >> $R/sanitize.txt ) &
timeout 500 python3 -m pytest $(cat bench/results/session-nov29f/call3/remaining.txt) -v -p no:cacheprovider -rfEs -n 11 \
  > $R/rest.log 2>&1
echo "rest rc=$? $(el) s"; tail -1 $R/rest.log; grep -E "^(FAILED|ERROR)" $R/rest.log | head -20; save
wait
tail -5 $R/sanitize.txt; save; echo "all $(el) s"
