#!/usr/bin/env bash
# Session dec02d, call 2 (issue 18): an A/B of MIOFIND_PREDICT_KEEP (a find on a miss measures at once cuDNN's
# candidates and the own solvers the cost model predicts fastest, up to 3 candidates in all; the rest in the
# background): "new" the default (3), "base" MIOFIND_PREDICT_KEEP=0 (the find before it), on bench_cold's 30 rows'
# warm finds in alternating child processes over a kernel cache a sync child filled, as session dec02c's calls 1 and 3.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/c2-cupyd MIOFIND_KERNEL_CACHE=/tmp/c2-kcd
rm -f /tmp/c2b-*.sqlite
mkdir -p $R/ab
ROWS=$(python3 -c "
import json
print(json.dumps([[s, t, d] for t in ('fp32', 'fp16') for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24',
                  'r50_256_28_3x3s2_n16', 'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # name, variant, then env assignments
  local name=$1 v=$2; shift 2
  local keep=(); [ $v = base ] && keep=(MIOFIND_PREDICT_KEEP=0)
  env MIOFIND_DB=sqlite:////tmp/c2b-$v-$name.sqlite ${keep[@]+"${keep[@]}"} "$@" timeout 60 python3 bench/bench_cold.py \
    --child miofind --rows "$ROWS" --warmup > $R/ab/$name.jsonl 2> $R/ab/$name.err
  echo "$v $name rc=$? $(el) s"
}
child sync new MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6 7 8; do
  [ $(el) -gt 330 ] && break
  if [ $((i % 2)) = 1 ]; then order="new base"; else order="base new"; fi
  for v in $order; do child $v$i $v; done; save
done
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt 2>&1; tail -1 $R/ab/summary.txt
python3 bench/results/session-dec01e/ab_parts.py $R/ab > $R/ab/parts.txt 2>&1; head -18 $R/ab/parts.txt
grep -h "inc_160\|r50_128" $R/ab/summary.txt | cut -c1-160
python3 - <<'PY'
import glob, json, collections
n = collections.Counter()
for p in glob.glob("/tmp/r/ab/new*.jsonl"):
    for ln in open(p):
        if ln.startswith("{"):
            r = json.loads(ln)
            n[r["timing"].get("surplus_deferred", 0)] += 1
print("new rows by surplus_deferred:", dict(n))
PY
gzip -f $R/ab/*.err; save
echo "all $(el) s"
