#!/usr/bin/env bash
# Session dec01c, call 5: the warm finds of bench_cold's 15 FP32 rows (5 layers x F/B/W), this session's find changes
# (PerfSnapshot, the verified-cubin memo, the merged first timing set with its hold seeded: "new") against the code before them ("base":
# call4/base.tgz, the four files at d3eb5790), in alternating child processes on one machine, six rounds; torch's
# benchmark-mode first call of each row in a process of its own; one timeline child of the new code.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
mkdir -p /tmp/ab/new /tmp/ab/base
tar xzf bench/results/session-dec01c/call4/base.tgz -C /tmp/ab/base
for f in miofind/compile.py miofind/harness.py miofind/find.py miofind/db/system.py; do cp $f /tmp/ab/new/$(echo $f | tr / _); done
use() {  # new | base
  for f in miofind/compile.py miofind/harness.py miofind/find.py miofind/db/system.py; do
    if [ $1 = new ]; then cp /tmp/ab/new/$(echo $f | tr / _) $f; else cp /tmp/ab/base/$f $f; fi
  done
}
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                                            'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # name, then env assignments
  local name=$1; shift
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 150 python3 bench/bench_cold.py --child miofind --rows "$ROWS" \
    --warmup > $R/$name.jsonl 2> $R/$name.err
  echo "$name rc=$? $(el) s"
}
use new; child sync MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6; do
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do use $v; child ${v}$i; done; save
done
use new; child timeline BENCH_COLD_TIMELINE=$R/timeline; save
for row in $(python3 -c "
import json
print(' '.join(','.join(r) for r in json.loads('$ROWS')))"); do
  IFS=, read s t d <<< "$row"
  timeout 60 python3 bench/bench_cold.py --child torch --rows "[[\"$s\",\"$t\",\"$d\"]]" >> $R/torch.jsonl 2>> $R/torch.err
done
echo "torch $(el) s"
python3 bench/results/session-dec01c/ab_summary.py $R > $R/summary.txt; cat $R/summary.txt
gzip -f $R/*.err; save
echo "all $(el) s"
