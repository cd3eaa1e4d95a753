#!/usr/bin/env bash
# Session dec01d, call 2 (an H200), at the code with fastread.one_connection (a find's reads of the user FindDB on one
# connection): `miofind warmup --arch sm_90`; bench_cold's whole table again (30 rows, the second run after call 1) with
# ResNet-50's first training step at batch 48 (FP32 and AMP; the installed caches exported as the process's own, as
# session nov28h's call 3); then an A/B of one_connection on the 15 FP32 rows' warm finds ("new": this code; "base":
# call2/base.tgz, fastread.py and find.py at 834aeca4) in alternating child processes, as session dec01c's call 5.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
cp -r /tmp/warm-kc /tmp/kcd; cp -r /tmp/warm-cupy /tmp/cupyd   # the A/B's caches, apart from the installed ones
export MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy
I="--installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy"
timeout 330 python3 bench/bench_cold.py --out $R/cold $I --resnet50 --resnet-configs fp32,amp --timeout 120 \
  > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9; grep -i -A4 "resnet" $R/cold/bench_cold.md | tail -6
save
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
mkdir -p /tmp/ab/new /tmp/ab/base
tar xzf bench/results/session-dec01d/call2/base.tgz -C /tmp/ab/base
FILES="miofind/db/fastread.py miofind/find.py"
for f in $FILES; do cp $f /tmp/ab/new/$(echo $f | tr / _); done
use() {  # new | base
  for f in $FILES; do
    if [ $1 = new ]; then cp /tmp/ab/new/$(echo $f | tr / _) $f; else cp /tmp/ab/base/$f $f; fi
  done
}
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                                            'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # name, then env assignments
  local name=$1; shift
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 100 python3 bench/bench_cold.py --child miofind --rows "$ROWS" \
    --warmup > $R/ab/$name.jsonl 2> $R/ab/$name.err
  echo "$name rc=$? $(el) s"
}
mkdir -p $R/ab
use new; child sync MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6; do
  [ $(el) -gt 545 ] && break
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do use $v; child ${v}$i; done; save
done
use new
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt; cat $R/ab/summary.txt
gzip -f $R/*.log $R/ab/*.err; save
echo "all $(el) s"
