#!/usr/bin/env bash
# Session dec03d, call 3: miofind.procpool without threads of its own (call 2's pool started a thread per worker as
# work came, which Python 3.12 refuses once the exit has begun: a background compile that first needed a second
# worker then compiled in its job). The warmup (precompile's pool), a process that waits for all its background jobs
# (MIOFIND_EXIT_WAIT=inf; call 1: 85.4 s, call 2: 104.9 s), and the tiered GPU tests in the time left (two refusals
# left 496 s of device time; fork_check.py and the API tests were dropped for it).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03c
D=bench/results/session-dec03d
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
python3 --version > $R/python.txt
MIOFIND_KERNEL_CACHE=/tmp/c3-kc CUPY_CACHE_DIR=/tmp/c3-cupy timeout 190 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -3 $R/warmup.log; save
timeout 150 python3 $S/resume_check.py train48-amp /tmp/c3-kc /tmp/c3-cupy inf:MIOFIND_EXIT_WAIT=inf p2: \
  > $R/inf.jsonl 2> $R/inf.err
echo "inf rc=$? $(el) s"; cut -c1-500 $R/inf.jsonl; save
MIOFIND_KERNEL_CACHE=/tmp/c3-kc timeout $(( 340 - $(el) )) python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/core/test_tiered_gpu.py > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(el) s"; tail -1 $R/gpu_tests.log
gzip -f $R/*.err; save
echo "all $(el) s"
