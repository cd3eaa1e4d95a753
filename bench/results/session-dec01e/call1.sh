#!/usr/bin/env bash
# Session dec01e, call 1 (an H200): an A/B of the kept preparation threads (find.prepare_all's pool, da614b1c) on
# bench_cold's 15 FP32 rows' warm finds ("new": this code; "base": call1/base.tgz, find.py before it) in alternating
# child processes, as session dec01d's call 2 (a MIOFIND_SPECIALIZE=sync child fills the kernel cache first, no
# `miofind warmup`); then where the Inception 1x7 and ResNet-50 3x3 FP32 warm finds spend their time at the new code:
# two BENCH_COLD_TIMELINE children (each call of the find's functions with its thread) and one BENCH_COLD_PROFILE child
# (cProfile of the find's own thread).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
mkdir -p /tmp/ab/base $R/ab
tar xzf bench/results/session-dec01e/call1/base.tgz -C /tmp/ab/base
cp miofind/find.py /tmp/ab/new_find.py
use() { if [ $1 = new ]; then cp /tmp/ab/new_find.py miofind/find.py; else cp /tmp/ab/base/miofind/find.py miofind/find.py; fi; }
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                                            'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 150 python3 bench/bench_cold.py --child miofind --rows "$rows" \
    --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
use new; child $R/ab sync "$ROWS" MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6; do
  [ $(el) -gt 330 ] && break
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do use $v; child $R/ab ${v}$i "$ROWS"; done; save
done
use new
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt; cat $R/ab/summary.txt
python3 bench/results/session-dec01e/ab_parts.py $R/ab > $R/ab/parts.txt 2>&1; head -30 $R/ab/parts.txt
R2='[["inc_160_17_1x7_n16","fp32","F"],["inc_160_17_1x7_n16","fp32","B"],["inc_160_17_1x7_n16","fp32","W"],["r50_128_28_3x3_n16","fp32","F"]]'
mkdir -p $R/diag
child $R/diag tl1 "$R2" BENCH_COLD_TIMELINE=$R/diag/tl1
child $R/diag tl2 "$R2" BENCH_COLD_TIMELINE=$R/diag/tl2
child $R/diag prof "$R2" BENCH_COLD_PROFILE=$R/diag/prof
gzip -f $R/ab/*.err $R/diag/*.err; save
echo "all $(el) s"
