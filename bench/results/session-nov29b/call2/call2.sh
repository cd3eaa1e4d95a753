#!/usr/bin/env bash
# Session nov29b, call 2 (any sm_90): where the warm finds of issue 18's four rows over 3x torch spend their host time.
# A cache-filling pass, then per round and variant (base, gil, noprefetch: prof.py) one warm child per shape over
# F/B/W, its finds profiled (r/prof/<variant>/), its threads listed (r/<variant>_*.err); the JSON lines in r/runs.jsonl.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cupyc
C=$PWD/bench/results/session-nov29b/call2
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
R50='[["r50_128_28_3x3_n16","fp32","F"],["r50_128_28_3x3_n16","fp32","B"],["r50_128_28_3x3_n16","fp32","W"]]'
INC='[["inc_160_17_1x7_n16","fp32","F"],["inc_160_17_1x7_n16","fp32","B"],["inc_160_17_1x7_n16","fp32","W"]]'
for rows in "$R50" "$INC"; do
  MIOFIND_DB=sqlite:////tmp/fill.sqlite timeout 200 python3 bench/bench_cold.py --child miofind --rows "$rows" \
    --warmup > /dev/null 2>&1
done
echo "filled $(el) s"
n=0
for round in 1 2; do
  for v in base gil noprefetch; do
    for rows in "$R50" "$INC"; do
      n=$((n+1)); ex=""; [ $v = noprefetch ] && ex="MIOFIND_CUDNN_PREFETCH=off"
      env $ex MIOFIND_DB=sqlite:////tmp/db$round$v$n.sqlite BENCH_COLD_PROFILE=$R/prof/$v timeout 60 \
        python3 $C/prof.py $v "$rows" 2> $R/${v}_${round}_$n.err | sed "s/^{/{\"variant\": \"$v\", \"round\": $round, /" \
        >> $R/runs.jsonl
    done
  done
  echo "round $round $(el) s"; save
done
python3 - << 'PY'
import json, statistics as st, collections
rows = [json.loads(l) for l in open("/tmp/r/runs.jsonl") if l.startswith("{")]
by = collections.defaultdict(list)
for r in rows:
    by[(r["shape"][:14], r["direction"], r["variant"])].append(r)
for k in sorted(by):
    xs = by[k]; t = lambda p: st.median(x["timing"].get(p, 0.0) for x in xs)
    print(k, f"find {st.median(x['find_ms'] for x in xs):.1f}", " ".join(f"{p[:-3]}={t(p):.1f}" for p in
          ("lookup_ms", "select_ms", "setup_ms", "configs_ms", "compile_ms", "prefetch_wait_ms", "verify_ms", "timing_ms", "store_ms")))
PY
save; echo "all $(el) s"
