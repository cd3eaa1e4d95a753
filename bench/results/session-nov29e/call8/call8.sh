#!/usr/bin/env bash
# Session nov29e, call 8 (the machine of call 7, still warm): call 7's same-run side-by-side of the forward twice more,
# reading the user DB call 7's tuning left (/tmp/u7.sqlite), to see the spread of its 0.850.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
[ -f /tmp/u7.sqlite ] || { echo "no /tmp/u7.sqlite: not call 7's machine; nothing run"; exit 1; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite
for i in 1 2; do
  MIOFIND_SPECIALIZE=sync timeout 200 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F \
    --set resnet50 --out $R/samerun$i > $R/samerun_F$i.txt 2>&1
  echo "samerun $i rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F$i.txt
done
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
