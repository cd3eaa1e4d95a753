#!/usr/bin/env bash
# Session nov30g, call 10 (any sm_90): the same-runs again on another process each, reading the tuned user DBs as they
# came back: F from call 9's DB, W from call 8's; and B at its find configs (empty DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
gunzip -c bench/results/session-nov30g/call9/u9.sqlite.gz > /tmp/f10.sqlite
gunzip -c bench/results/session-nov30g/call8/u8.sqlite.gz > /tmp/w10.sqlite
export CUPY_CACHE_DIR=/tmp/cupy10 MIOFIND_KERNEL_CACHE=/tmp/kc10 MIOFIND_SYSTEM_DB=none MIOFIND_SPECIALIZE=sync
for d in F W; do
  db=/tmp/f10.sqlite; [ $d = W ] && db=/tmp/w10.sqlite
  MIOFIND_DB=sqlite:///$db timeout 200 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs $d \
    --set resnet50 --out $R/samerun_$d > $R/samerun_$d.txt 2>&1
  echo "samerun $d rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_$d.txt
done
MIOFIND_DB=sqlite:////tmp/b10.sqlite timeout 200 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness \
  --dirs B --set resnet50 --out $R/samerun_B > $R/samerun_B.txt 2>&1
echo "samerun B rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_B.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
