#!/usr/bin/env bash
# Prepared (session nov27l, not run): the three-warpgroup tiles for the presets where cuDNN still wins by the records
# (VGG-16 and U-Net at N=32 NHWC FP16/BF16: B 1.04-1.08, W 1.01-1.07, U-Net F 1.01-1.05; session-nov27l/README).
# (1) `miofind tune` of their F, B and W problems for the Hopper solvers over the WGS = 3 configs (the find's and the
# stored configs first), into a copy of the shipped DB; (2) every record of those problems marked stale and measured
# again on this host, all solvers but the naive ones; cut candidates restored (call2/merge.py); (3) the ratios by
# preset (session-nov27k/call1/ratios.py) against the shipped DB. On the CPU afterwards: adopt r/db.sqlite.gz if it
# holds, and `python tests/core/test_trust.py` (no kernel changes in it).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
save() { tar czf $OUT/r.tgz -C /tmp r; }
H=bench/results/session-nov27l
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
for S in ConvImplicitGemmHopperWrw ConvImplicitGemmHopperBwd ConvImplicitGemmHopperFwd; do
  d=${S: -3}
  for m in vgg16 unet; do
    MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 150 python3 -m miofind.cli tune --model $m --batch 32 \
      --dtype fp16 --dtype bf16 --layout NHWC --direction ${d:0:1} --tune-solver $S --where WGS=3 --retune \
      --max-configs 24 --patience 12 --db sqlite:////tmp/db.sqlite --json-out $R/tune_${m}_$d.json > $R/tune_${m}_$d.log 2>&1
    echo "tune $m $d rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_${m}_$d.log | cut -c1-200; gzip -f $R/tune_${m}_$d.log; save
  done
done
SOLVERS=$(python3 $H/call3/stale_keys.py /tmp/db.sqlite $H/prepared/vgg_unet_keys.json 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
timeout 120 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys $H/prepared/vgg_unet_keys.json \
  --seconds 100 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-200
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"update find_records set kernel_hash = substr(kernel_hash, 7) where kernel_hash like 'stale:%'\").rowcount
db.commit(); print('cut or unmeasured, kept as before:', n)
" | tee $R/db.log
python3 $H/call2/merge.py finddb/sm_90-132.sqlite /tmp/db.sqlite /tmp/final.sqlite --any-solver | tee -a $R/db.log
gzip -c /tmp/final.sqlite > $R/db.sqlite.gz
python3 bench/results/session-nov27k/call1/ratios.py finddb/sm_90-132.sqlite /tmp/final.sqlite | tee $R/ratios.txt
save
