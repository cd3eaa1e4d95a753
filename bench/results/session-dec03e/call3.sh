#!/usr/bin/env bash
# Session dec03e, call 3: why the first background drain after `miofind warmup` compiles 4x slower than later ones
# (calls 1-2: 160.6 s of compile calls against 34.5-39.2 s, either pool). A fresh warmup, then `sync` (timed: the
# dirty pages the warmup and the cache copies leave), then two drains with this checkout's pool, with
# /proc/meminfo's Dirty and Writeback, the load and the busiest processes sampled throughout (sampler.log).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03e
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
( while true; do
    echo "t=$(el) $(grep -E '^(Dirty|Writeback):' /proc/meminfo | tr -s ' ' | tr '\n' ' ') load=$(cut -d' ' -f1-3 /proc/loadavg)"
    [ -r /proc/pressure/io ] && echo "  io: $(head -1 /proc/pressure/io)"
    [ $(( $(el) % 10 )) -lt 2 ] && ps -eo pcpu,ni,etimes,comm --sort=-pcpu | head -6 | sed 's/^/  /'
    sleep 2
  done ) > $R/sampler.log 2>&1 &
SAMPLER=$!
df -h /tmp > $R/df.txt; mount | grep -E ' /tmp | / ' >> $R/df.txt
rm -rf /tmp/e-kc /tmp/e-cupy
MIOFIND_KERNEL_CACHE=/tmp/e-kc CUPY_CACHE_DIR=/tmp/e-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -3 $R/warmup.log; du -sh /tmp/e-kc /tmp/e-cupy | tee $R/du.txt
t=$(date +%s%N); sync; echo "sync took $(( ($(date +%s%N) - t) / 1000000 )) ms at $(el) s" | tee $R/sync.txt
save
for i in 1 2; do
  timeout $(( 585 - $(el) )) python3 $S/../session-dec03c/resume_check.py train48-amp /tmp/e-kc /tmp/e-cupy \
    "new:MIOFIND_EXIT_WAIT=inf,PYTHONPATH=$PWD:/tmp/site:$PWD/$S/probe,PROBE_OUT=$R/probe-$i-new" \
    > $R/run$i-new.jsonl 2> $R/run$i-new.err
  echo "run $i new rc=$? $(el) s"; cut -c1-300 $R/run$i-new.jsonl; save
done
kill $SAMPLER
gzip -f $R/*.err; save
echo "all $(el) s"
