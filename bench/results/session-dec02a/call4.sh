#!/usr/bin/env bash
# Session dec02a, call 4 (an H200): call 3 found the ResNet-50 3x3 FP32 B find's time outside its parts to be its wait
# for the cuDNN prefetch thread (prefetch_wait_ms 6.4-10.7 ms). Here: three BENCH_COLD_TIMELINE children of that row
# with the prefetch thread's cuDNN calls wrapped too (plan_graph, PlanGraph.build, first_plans, first_runs,
# NativePlan); then an A/B of MIOFIND_CUDNN_PREFETCH=load (default) against build (plans built in the thread, not run
# there: their first run is then the find's verification run) on bench_cold's 15 FP32 rows, alternating children.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 150 python3 bench/bench_cold.py --child miofind --rows "$rows" \
    --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
mkdir -p $R/diag $R/ab
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                                            'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child $R/ab sync "$ROWS" MIOFIND_SPECIALIZE=sync; save
R2='[["r50_128_28_3x3_n16","fp32","B"]]'
for i in 1 2 3; do child $R/diag tl$i "$R2" BENCH_COLD_TIMELINE=$R/diag/tl$i; done
gzip -f $R/diag/*.err; save
# "new" = build, "base" = load, so that ab_summary's table reads build / load
for i in 1 2 3 4 5 6; do
  [ $(el) -gt 200 ] && break
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do
    if [ $v = new ]; then child $R/ab new$i "$ROWS" MIOFIND_CUDNN_PREFETCH=build; else child $R/ab base$i "$ROWS"; fi
  done; save
done
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt; cat $R/ab/summary.txt
python3 bench/results/session-dec01e/ab_parts.py $R/ab > $R/ab/parts.txt 2>&1; head -30 $R/ab/parts.txt
gzip -f $R/ab/*.err; save; echo "all $(el) s"
