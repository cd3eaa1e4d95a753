#!/usr/bin/env bash
# Session nov29b, call 3 (any sm_90): issue 18 at the timing in sets, and where the warm finds' host time goes.
# 1. session nov28f's lookup_cpu.py on this host (the same host work as on the 2-core CPU machine) and a plain Python
#    timeit on each; 2. `miofind warmup`, then bench_cold (FP32 and FP16, warm and empty caches, torch beside: r/cold/);
# 3. the two FP32 shapes that missed 3x torch, warm children (call 2's prof.py, unprofiled) under variants: base, gil
#    (the whole find under prompt_gil), build (MIOFIND_CUDNN_PREFETCH=build: no run of the cuDNN plans in the thread),
#    noprefetch (=off), rotated by round (r/variants.jsonl).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
C=$PWD/bench/results/session-nov29b
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
python3 -m timeit -n 200000 "sum(range(100))" > $R/timeit.txt 2>&1; cat $R/timeit.txt
MIOFIND_KERNEL_CACHE=/tmp/kc0 timeout 60 python3 bench/results/session-nov28f/lookup_cpu.py > $R/lookup_host.txt 2>&1; cat $R/lookup_host.txt
echo "lookup $(el) s"
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -2 $R/warmup.log
timeout 230 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"; save
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
export MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy
R50='[["r50_128_28_3x3_n16","fp32","F"],["r50_128_28_3x3_n16","fp32","B"],["r50_128_28_3x3_n16","fp32","W"]]'
INC='[["inc_160_17_1x7_n16","fp32","F"],["inc_160_17_1x7_n16","fp32","B"],["inc_160_17_1x7_n16","fp32","W"]]'
for rows in "$R50" "$INC"; do
  MIOFIND_DB=sqlite:////tmp/fill.sqlite timeout 60 python3 bench/bench_cold.py --child miofind --rows "$rows" > /dev/null 2>&1
done
n=0; V=(base gil build noprefetch)
for round in 0 1 2; do
  for i in 0 1 2 3; do
    v=${V[$(( (i + round) % 4 ))]}
    for rows in "$R50" "$INC"; do
      n=$((n+1)); ex="MIOFIND_CUDNN_PREFETCH=load"; [ $v = build ] && ex="MIOFIND_CUDNN_PREFETCH=build"
      [ $v = noprefetch ] && ex="MIOFIND_CUDNN_PREFETCH=off"
      env $ex MIOFIND_DB=sqlite:////tmp/v$n.sqlite timeout 60 python3 $C/call2/prof.py $v "$rows" 2> $R/v_$n.err \
        | sed "s/^{/{\"variant\": \"$v\", \"round\": $round, /" >> $R/variants.jsonl
    done
  done
  echo "round $round $(el) s"; save
  [ $(el) -gt 520 ] && break
done
python3 - << 'PY' | tee $R/variants.txt
import json, statistics as st, collections
rows = [json.loads(l) for l in open("/tmp/r/variants.jsonl") if l.startswith("{")]
by = collections.defaultdict(list)
for r in rows:
    by[(r["shape"][:14], r["direction"], r["variant"])].append(r)
for k in sorted(by):
    xs = by[k]; t = lambda p: st.median(x["timing"].get(p, 0.0) for x in xs)
    print(k, len(xs), f"find {st.median(x['find_ms'] for x in xs):.1f}", " ".join(f"{p[:-3]}={t(p):.1f}" for p in
          ("lookup_ms", "select_ms", "setup_ms", "configs_ms", "compile_ms", "prefetch_wait_ms", "verify_ms", "timing_ms", "store_ms")))
PY
gzip -f $R/*.log; save; echo "all $(el) s"
