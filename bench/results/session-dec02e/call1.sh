#!/usr/bin/env bash
# Session dec02e, call 1 (issue 18): `miofind warmup --arch sm_90` into an installed cache; bench_cold's whole table;
# then where the Inception 1x7 FP32 F/B finds' time goes on the device: (a) bench_cold's own children for that shape
# with BENCH_COLD_TIMELINE (the table's state: warm-up shape's finds, then the shape's rows), (b) one warm child that
# runs every FP32 row with the 1x7 rows last (call 3 of dec02d's state), timeline on; then ResNet-50's first training
# step at batch 48 (FP32, then AMP while time is left), its warm run on a copy of the installed cache.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy timeout 260 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c1-kc --installed-cupy-cache /tmp/c1-cupy"
timeout $(( 560 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9; save
BENCH_COLD_TIMELINE=$R/tl-table timeout 60 python3 bench/bench_cold.py --out $R/diag-table $I --timeout 30 \
  --shapes inc_160_17_1x7_n16 --dtypes fp32 > $R/diag-table.log 2>&1
echo "diag-table rc=$? $(el) s"; grep '"key"' $R/diag-table.log | cut -c1-200
rm -rf /tmp/c1-kcl /tmp/c1-cupyl; cp -r /tmp/c1-kc /tmp/c1-kcl; cp -r /tmp/c1-cupy /tmp/c1-cupyl
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                  'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
MIOFIND_KERNEL_CACHE=/tmp/c1-kcl CUPY_CACHE_DIR=/tmp/c1-cupyl MIOFIND_DB=sqlite:////tmp/c1-late.sqlite \
  BENCH_COLD_TIMELINE=$R/tl-late timeout 60 python3 bench/bench_cold.py --child miofind --rows "$ROWS" --warmup \
  > $R/late.jsonl 2> $R/late.err
echo "late rc=$? $(el) s"; save
rm -rf /tmp/c1-kcw; cp -r /tmp/c1-kc /tmp/c1-kcw
for cfg in fp32 amp; do
  [ $(el) -gt 470 ] && break
  MIOFIND_KERNEL_CACHE=/tmp/c1-kcw timeout $(( 590 - $(el) )) python3 bench/bench_cold.py --out $R/r50-$cfg $I \
    --resnet50 --skip-layers --resnet-configs $cfg > $R/r50-$cfg.log 2>&1
  echo "r50 $cfg rc=$? $(el) s"; grep '"model": "resnet50"' $R/r50-$cfg.log | cut -c1-300; save
done
gzip -f $R/*.log $R/*.err; save
echo "all $(el) s"
