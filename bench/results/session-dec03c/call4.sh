#!/usr/bin/env bash
# Session dec03c, call 4 (after call 3 found that jobs compiling at exit could not import the compile pool's module:
# fixed in tiered._executor): the deferred solvers a stopped exit leaves are measured by a later process that lives
# long enough (resume_check.py: p1 stops at exit, p2 waits for its background after the step, p3 reads), then a fresh
# user DB with MIOFIND_EXIT_WAIT=inf (every job done before the process ends).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03c
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c4-kc CUPY_CACHE_DIR=/tmp/c4-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
timeout 150 python3 $S/resume_check.py train48-amp /tmp/c4-kc /tmp/c4-cupy p1: p2:MIOFIND_BENCH_DRAIN=1 p3: \
  > $R/resume.jsonl 2> $R/resume.err
echo "resume rc=$? $(el) s"; cut -c1-420 $R/resume.jsonl; save
if [ $(el) -lt 250 ]; then
  timeout $(( 330 - $(el) )) python3 $S/resume_check.py train48-amp /tmp/c4-kc /tmp/c4-cupy \
    inf:MIOFIND_EXIT_WAIT=inf > $R/inf.jsonl 2> $R/inf.err
  echo "inf rc=$? $(el) s"; cut -c1-420 $R/inf.jsonl
fi
gzip -f $R/*.err; save
echo "all $(el) s"
