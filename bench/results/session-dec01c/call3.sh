#!/usr/bin/env bash
# Session dec01c, call 3: where the warm find of issue 18's Inception 1x7 FP32 layer spends its time, per thread
# (BENCH_COLD_TIMELINE: each call of the find's main functions with its thread, start and end; no cProfile). Call 1's
# way: a MIOFIND_SPECIALIZE=sync child fills the kernel cache, then plain children on fresh user DBs, two with the
# timeline and one without (its cost).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
ROWS='[["inc_160_17_1x7_n16","fp32","F"],["inc_160_17_1x7_n16","fp32","B"],["inc_160_17_1x7_n16","fp32","W"]]'
child() {  # name, then env assignments
  local name=$1; shift
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 120 python3 bench/bench_cold.py --child miofind --rows "$ROWS" \
    --warmup > $R/$name.jsonl 2> $R/$name.err
  echo "$name rc=$? $(el) s"
  python3 -c "
import json,sys
for ln in open('$R/$name.jsonl'):
    r=json.loads(ln); t=r['timing'] or {}
    print(r['direction'], round(r['find_ms'],1), {k: round(t[k],1) for k in ('lookup_ms','select_ms','setup_ms','configs_ms','compile_ms','prefetch_wait_ms','measure_ms','verify_ms','timing_ms','store_ms') if k in t})"
}
child sync MIOFIND_SPECIALIZE=sync; save
child tl1 BENCH_COLD_TIMELINE=$R/tl1; save
child plain1; save
child tl2 BENCH_COLD_TIMELINE=$R/tl2; save
gzip -f $R/*.err; save
echo "all $(el) s"
