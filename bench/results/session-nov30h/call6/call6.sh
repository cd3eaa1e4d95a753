#!/usr/bin/env bash
# Session nov30h, call 6 (any sm_90): the same-run W of call 4 again in a new process (on call 5's machine, still
# held; new caches), reading call 4's user DB (ResNet-50's W tuned with `miofind tune`'s default budget and the Hopper
# W solver's own; no system DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
gunzip -c bench/results/session-nov30h/call4/u4.sqlite.gz > /tmp/u6.sqlite
export CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u6.sqlite
MIOFIND_SPECIALIZE=sync timeout 200 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_W > $R/samerun_W.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
