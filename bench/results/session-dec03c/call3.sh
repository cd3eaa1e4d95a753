#!/usr/bin/env bash
# Session dec03c, call 3: the deferred solvers a stopped exit leaves are measured by later processes (resume_check.py:
# four fresh processes' ResNet-50 AMP first steps on one user DB and kernel cache), and the tiered GPU tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03c
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c3-kc CUPY_CACHE_DIR=/tmp/c3-cupy timeout 230 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
timeout 300 python3 $S/resume_check.py train48-amp /tmp/c3-kc /tmp/c3-cupy > $R/resume.jsonl 2> $R/resume.err
echo "resume rc=$? $(el) s"; cut -c1-420 $R/resume.jsonl; save
MIOFIND_KERNEL_CACHE=/tmp/c3-kc timeout $(( 520 - $(el) )) python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(el) s"; tail -3 $R/gpu_tests.log
gzip -f $R/*.err; save
echo "all $(el) s"
