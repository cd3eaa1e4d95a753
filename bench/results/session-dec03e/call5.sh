#!/usr/bin/env bash
# Session dec03e, call 5: is NVRTC slow in the first processes of a fresh device machine (calls 1-4: the first drain
# after a warmup compiled each kernel 4-5x slower than the next process did, the same 790 kernels from the same
# cache)? Fresh processes compile kernel sets A, A, B, B, A of warmup's list one after another; the files written
# anywhere on / after the first are listed (a cache we do not know of).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03e
touch /tmp/marker; sleep 1
for set in A A B B A; do
  s=0; [ $set = B ] && s=400
  timeout 40 python3 $S/nvrtc_speed.py $s 40 | tee -a $R/speed.jsonl
  [ -f $R/written.txt ] || find / -xdev -newer /tmp/marker -type f 2>/dev/null \
    | grep -v -E '^/(proc|sys|tmp/r/)|__pycache__' | head -80 > $R/written.txt
done
echo "all $(( $(date +%s) - T0 )) s"
tar czf $OUT/r.tgz -C /tmp r
