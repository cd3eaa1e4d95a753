#!/usr/bin/env bash
# Session dec02c, call 1 (an H200): the whole bench_cold.py table at 693dfdf7 (session dec02b's measure_order: own
# candidates measured while the cuDNN prefetch thread still runs), as session dec02a's call 2; then, with the time
# left, session dec02b's A/B of measure_order (its call1.sh's rows and children, 4 alternating rounds; "base" is
# session-dec02b/call1/base.tgz, find.py before it), whose first results were lost with that session.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c1-kc --installed-cupy-cache /tmp/c1-cupy"
timeout $(( 560 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9
gzip -f $R/*.log; save
# the A/B, as session dec02b's call 1
export CUPY_CACHE_DIR=/tmp/c1-cupyd MIOFIND_KERNEL_CACHE=/tmp/c1-kcd
rm -f /tmp/c1b-*.sqlite
mkdir -p /tmp/c1ab/base /tmp/c1ab/new/miofind $R/ab
tar xzf bench/results/session-dec02b/call1/base.tgz -C /tmp/c1ab/base
cp miofind/find.py /tmp/c1ab/new/miofind/
use() { cp /tmp/c1ab/$1/miofind/find.py miofind/; }
ROWS=$(python3 -c "
import json
print(json.dumps([[s, t, d] for t in ('fp32', 'fp16') for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24',
                  'r50_256_28_3x3s2_n16', 'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/c1b-$name.sqlite "$@" timeout 60 python3 bench/bench_cold.py --child miofind \
    --rows "$rows" --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
[ $(el) -lt 500 ] && { use new; child $R/ab sync "$ROWS" MIOFIND_SPECIALIZE=sync; save; }
for i in 1 2 3 4; do
  [ $(el) -gt 545 ] && break
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do use $v; child $R/ab ${v}$i "$ROWS"; done; save
done
use new
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt 2>&1; cat $R/ab/summary.txt | tail -5
python3 bench/results/session-dec02b/own_times.py $R/ab > $R/ab/own_times.txt 2>&1; tail -3 $R/ab/own_times.txt
gzip -f $R/ab/*.err; save
echo "all $(el) s"
