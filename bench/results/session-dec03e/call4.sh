#!/usr/bin/env bash
# Session dec03e, call 4: does the first drain after `miofind warmup` leave its specialised cubins where the next
# process's copy of the cache finds them (call 3: no dirty pages, sync 4 ms, the workers CPU-bound; first drain
# 101.3 s, second 19.7 s)? The warmed cache's cubins counted before and after each drain; the probe counts, per
# background compile call, the kernels already cached as it began.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03e
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
count() { echo "$1: $(find /tmp/e-kc -name '*.cubin' | wc -l) cubins in /tmp/e-kc, newest $(ls -t /tmp/e-kc | head -1)" \
  | tee -a $R/counts.txt; }
rm -rf /tmp/e-kc /tmp/e-cupy
MIOFIND_KERNEL_CACHE=/tmp/e-kc CUPY_CACHE_DIR=/tmp/e-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -3 $R/warmup.log; count "after warmup"; save
for i in 1 2; do
  timeout $(( 585 - $(el) )) python3 $S/../session-dec03c/resume_check.py train48-amp /tmp/e-kc /tmp/e-cupy \
    "new:MIOFIND_EXIT_WAIT=inf,PYTHONPATH=$PWD:/tmp/site:$PWD/$S/probe,PROBE_OUT=$R/probe-$i-new" \
    > $R/run$i-new.jsonl 2> $R/run$i-new.err
  echo "run $i new rc=$? $(el) s"; cut -c1-300 $R/run$i-new.jsonl; count "after run $i"; save
done
gzip -f $R/*.err; save
echo "all $(el) s"
