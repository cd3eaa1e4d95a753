#!/usr/bin/env bash
# Session dec02e, call 2 (issue 18): bench_cold's whole table again at 3c7fe8ad+ (the FFT solver's ranked tiles made
# dicts only up to TUNE_CONFIGS), each miofind row listing the garbage collector's pauses in its find (BENCH_COLD_GC);
# then the Inception 1x7 FP32 rows three more times as the table runs them, and in a warm child that runs every FP32
# row with the 1x7 rows last (call 1's 100 ms outlier), alternating with the same child after gc.freeze()
# (BENCH_COLD_GC_FREEZE, a diagnosis).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c2-kc CUPY_CACHE_DIR=/tmp/c2-cupy timeout 260 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c2-kc --installed-cupy-cache /tmp/c2-cupy"
export BENCH_COLD_GC=1
timeout $(( 500 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9; save
for i in 1 2 3; do
  [ $(el) -gt 480 ] && break
  timeout 60 python3 bench/bench_cold.py --out $R/diag$i $I --timeout 30 --shapes inc_160_17_1x7_n16 --dtypes fp32 \
    > $R/diag$i.log 2>&1
  echo "diag$i rc=$? $(el) s"; grep '"key"' $R/diag$i.log | cut -c1-160
done
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                  'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
for i in 1 2 3; do
  for v in plain freeze; do
    [ $(el) -gt 540 ] && break
    rm -rf /tmp/c2-kcl /tmp/c2-cupyl /tmp/c2-late.sqlite; cp -r /tmp/c2-kc /tmp/c2-kcl; cp -r /tmp/c2-cupy /tmp/c2-cupyl
    F=(); [ $v = freeze ] && F=(BENCH_COLD_GC_FREEZE=1)
    env ${F[@]+"${F[@]}"} MIOFIND_KERNEL_CACHE=/tmp/c2-kcl CUPY_CACHE_DIR=/tmp/c2-cupyl \
      MIOFIND_DB=sqlite:////tmp/c2-late.sqlite timeout 60 python3 bench/bench_cold.py --child miofind --rows "$ROWS" \
      --warmup > $R/late-$v$i.jsonl 2> $R/late-$v$i.err
    echo "late-$v$i rc=$? $(el) s"
  done; save
done
python3 - <<'PY'
import glob, json
for f in sorted(glob.glob("/tmp/r/late-*.jsonl")):
    rows = [json.loads(l) for l in open(f)]
    tot = sum(r["find_ms"] for r in rows)
    gcs = sum(ms for r in rows for g, ms in r.get("gc", []))
    inc = [f'{r["direction"]} {r["find_ms"]:.1f}' for r in rows if r["shape"].startswith("inc_160")]
    print(f.split("/")[-1], f"sum {tot:.1f} ms, gc {gcs:.1f} ms;", "1x7:", ", ".join(inc))
PY
gzip -f $R/*.log $R/*.err; save
echo "all $(el) s"
