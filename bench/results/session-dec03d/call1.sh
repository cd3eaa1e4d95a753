#!/usr/bin/env bash
# Session dec03d, call 1: session dec03c's exit code (da9b2462) on the GPU where it was checked on the CPU only:
# the tiered and API GPU tests; MIOFIND_EXIT_WAIT=inf (resume_check.py: a process that finishes every background job
# before it ends, then one that reads); a process forked while jobs are pending (fork_check.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03c
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
MIOFIND_KERNEL_CACHE=/tmp/c1-kc timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(el) s"; tail -1 $R/gpu_tests.log; save
timeout 100 python3 bench/results/session-dec03d/fork_check.py /tmp/c1-kc /tmp/c1-cupy > $R/fork.json 2> $R/fork.err
echo "fork rc=$? $(el) s"; cat $R/fork.json; save
timeout $(( 560 - $(el) )) python3 $S/resume_check.py train48-amp /tmp/c1-kc /tmp/c1-cupy \
  inf:MIOFIND_EXIT_WAIT=inf p2: > $R/inf.jsonl 2> $R/inf.err
echo "inf rc=$? $(el) s"; cut -c1-500 $R/inf.jsonl
gzip -f $R/*.err; save
echo "all $(el) s"
