#!/usr/bin/env bash
# Session dec03d, call 2: the compile pools as miofind.procpool's workers (call 1 showed that the spawned
# multiprocessing pool ran an unguarded script again in every worker). The warmup (precompile's pool); fork_check.py
# (unguarded) through miofind and through cuDNN alone; a process that waits for all its background jobs
# (MIOFIND_EXIT_WAIT=inf, against call 1's 85.4 s with the old pool); the tiered, API and tuning GPU tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03c
D=bench/results/session-dec03d
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c2-kc CUPY_CACHE_DIR=/tmp/c2-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -3 $R/warmup.log; save
for b in miofind cudnn; do
  timeout 100 python3 $D/fork_check.py /tmp/c2-kc /tmp/c2-cupy $b > $R/fork_$b.json 2> $R/fork_$b.err
  echo "fork $b rc=$? $(el) s"; cat $R/fork_$b.json; save
done
timeout 180 python3 $S/resume_check.py train48-amp /tmp/c2-kc /tmp/c2-cupy inf:MIOFIND_EXIT_WAIT=inf p2: \
  > $R/inf.jsonl 2> $R/inf.err
echo "inf rc=$? $(el) s"; cut -c1-500 $R/inf.jsonl; save
MIOFIND_KERNEL_CACHE=/tmp/c2-kc timeout $(( 570 - $(el) )) python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py tests/tuning/test_tune_gpu.py > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(el) s"; tail -2 $R/gpu_tests.log
gzip -f $R/*.err; save
echo "all $(el) s"
