#!/usr/bin/env bash
# Session nov30a, call 3 (any sm_90; an H200): where a warm find of the FP32 Inception 1x7 layer spends its 40-47 ms
# (call 2: 3.2-4.0x torch's first call on this host). bench_cold.py's miofind child run directly: a first child with
# MIOFIND_SPECIALIZE=sync compiles every candidate's kernels (no `miofind warmup` needed), then children on that
# kernel cache and fresh user DBs: one unprofiled, one under cProfile (BENCH_COLD_PROFILE), one unprofiled again.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 CUPY_CACHE_DIR=/tmp/cupy3
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
    print(r['direction'], round(r['find_ms'],1), {k: round(t[k],1) for k in ('lookup_ms','select_ms','setup_ms','configs_ms','compile_ms','prefetch_wait_ms','measure_ms','store_ms') if k in t}, r['failures'])"
}
child sync MIOFIND_SPECIALIZE=sync; save
child plain1; save
child prof BENCH_COLD_PROFILE=$R/prof; save
child plain2; save
child plain3; save
gzip -f $R/*.err; save; echo "all $(el) s"
