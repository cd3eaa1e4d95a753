#!/usr/bin/env bash
# Session dec03c, call 2: how long a process takes to end after ResNet-50's first training step (batch 48) leaves
# work to the background, with this session's stop at exit (miofind.tiered._at_exit, MIOFIND_EXIT_WAIT) and with the
# code before it (tiered_before.py, swapped in), each on fresh copies of `miofind warmup`'s caches and an empty user
# DB (exit_ab.py); and bench_cold.py --resnet50 (FP32 and AMP, beside cuDNN's benchmark mode) with the new code.
# tiered_before.py was `git show e3d43f49:miofind/tiered.py`, byte for byte; it was removed after the call as a
# copy of old code: recreate it that way to run this again.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03c
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c2-kc CUPY_CACHE_DIR=/tmp/c2-cupy timeout 230 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
for cfg in train48-amp train48-fp32; do
  timeout 120 python3 $S/exit_ab.py new $cfg /tmp/c2-kc /tmp/c2-cupy >> $R/exit_ab.jsonl 2>> $R/exit_ab.err
  echo "new $cfg rc=$? $(el) s"; tail -1 $R/exit_ab.jsonl | cut -c1-250
done
save
I="--installed-cache /tmp/c2-kc --installed-cupy-cache /tmp/c2-cupy"
rm -rf /tmp/c2-kcw; cp -r /tmp/c2-kc /tmp/c2-kcw
MIOFIND_KERNEL_CACHE=/tmp/c2-kcw timeout $(( 400 - $(el) )) python3 bench/bench_cold.py --out $R/r50 $I \
  --resnet50 --skip-layers --resnet-configs fp32,amp > $R/r50.log 2>&1
echo "r50 rc=$? $(el) s"; grep '"model": "resnet50"' $R/r50.log | cut -c1-400; save
# the code before: every queued job runs to its end at exit
cp miofind/tiered.py /tmp/tiered_new.py; cp $S/tiered_before.py miofind/tiered.py
timeout $(( 575 - $(el) )) python3 $S/exit_ab.py before train48-amp /tmp/c2-kc /tmp/c2-cupy >> $R/exit_ab.jsonl \
  2>> $R/exit_ab.err
echo "before train48-amp rc=$? $(el) s"; tail -1 $R/exit_ab.jsonl | cut -c1-250
cp /tmp/tiered_new.py miofind/tiered.py
gzip -f $R/*.log $R/*.err; save
echo "all $(el) s"
