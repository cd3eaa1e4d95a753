#!/usr/bin/env bash
# Session nov28b, call 5 (H100): (1) the TF32 tests again (call 4's failure was a test whose problem defaulted to a split
# and had no find alternates; now problems with a persistent default, strides 1 and 2); (2) ResNet-50's N=32 NHWC
# FP16/BF16 forward problems tuned for the Hopper F solver over every persistent copy-engine config (--where
# PERSIST=1,TMA=1: ping-pong, one to three warpgroups, 3-8 stages; the find's and stored configs first, so no tuned config
# gets slower), 48 configs at most, patience 24, into a copy of the shipped DB; (3) every record of those 46 problems
# marked stale and measured again on this host (all solvers but the naive ones), cut candidates restored
# (session-nov27l/call2/merge.py --any-solver: no kernel change since call 4); own best / cuDNN by the records.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
F=ConvImplicitGemmHopperFwd
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  tests/implicit_gemm_hopper/test_tf32.py > $R/tests_tf32.log 2>&1
echo "tf32 tests rc=$? $(el) s: $(tail -n 1 $R/tests_tf32.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests_tf32.log | cut -c1-300 | head; save
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 240 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction F --tune-solver $F --where PERSIST=1,TMA=1 --retune \
  --max-configs 48 --patience 24 --db sqlite:////tmp/db.sqlite --json-out $R/tune_Fwd.json > $R/tune_Fwd.log 2>&1
echo "tune F rc=$? $(el) s"; tail -n 1 $R/tune_Fwd.log | cut -c1-200; gzip -f $R/tune_Fwd.log; save
cp /tmp/db.sqlite /tmp/tuned.sqlite
L=bench/results/session-nov27l/call3
SOLVERS=$(python3 $L/stale_keys.py /tmp/db.sqlite $L/r50_f_keys.json 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
timeout 100 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys $L/r50_f_keys.json --seconds 80 --json $R/remeasure.json \
  > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(el) s"; tail -n 1 $R/remeasure.log | cut -c1-200; gzip -f $R/remeasure.log
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"update find_records set kernel_hash = substr(kernel_hash, 7) where kernel_hash like 'stale:%'\").rowcount
db.commit(); print('not measured again, kept as before:', n)
" | tee $R/db.log
python3 bench/results/session-nov27l/call2/merge.py finddb/sm_90-132.sqlite /tmp/db.sqlite /tmp/final.sqlite --any-solver | tee -a $R/db.log
gzip -c /tmp/final.sqlite > $R/db.sqlite.gz
python3 bench/results/shipped-db-hopper-tuned/ratio.py finddb/sm_90-132.sqlite /tmp/tuned.sqlite /tmp/final.sqlite | tee $R/ratios.txt
save
