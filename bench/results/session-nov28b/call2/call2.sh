#!/usr/bin/env bash
# Session nov28b, call 2 (H100): the shipped DB after the TF32 build changed kernels_src/implicit_gemm_hopper_fwd.cu (its
# 16-bit builds' machine code is unchanged, ../cubins_identical.txt, but the trust key covers the source). On a copy:
# (1) every Hopper F and B record deleted and measured again (scripts/add-solver-records --keep-tuned: the stored tuned
# configs re-tuned over their first batch first); (2) every record of ResNet-50's N=32 NHWC FP16/BF16 problems marked
# stale and measured again on this host, all solvers but the naive ones, so that own / cuDNN compares one host's
# times; cut candidates restored (merge.py); (3) own best / cuDNN by the records (shipped-db-hopper-tuned/ratio.py),
# before and after; (4) with the new DB in finddb/, the TF32 tests and the torch, tiered and API GPU tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
H=bench/results/session-nov28b/call2
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
F=ConvImplicitGemmHopperFwd; B=ConvImplicitGemmHopperBwd
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id in ('$F', '$B')\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
timeout 330 scripts/add-solver-records /tmp/db.sqlite --solver $F --solver $B --keep-tuned --seconds 300 \
  --json $R/add_fb.json > $R/add_fb.log 2>&1
echo "add F/B rc=$? $(el) s"; tail -n 1 $R/add_fb.log | cut -c1-300; gzip -f $R/add_fb.log; save
SOLVERS=$(python3 bench/results/session-cw/call6/stale_r50.py /tmp/db.sqlite 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
timeout 130 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys bench/results/session-cw/call6/r50_keys.json \
  --seconds 110 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(el) s"; tail -n 1 $R/remeasure.log | cut -c1-300; gzip -f $R/remeasure.log
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"update find_records set kernel_hash = substr(kernel_hash, 7) where kernel_hash like 'stale:%'\").rowcount
db.commit(); print('not measured again, kept as before:', n)
" | tee -a $R/db.log
python3 $H/merge.py finddb/sm_90-132.sqlite /tmp/db.sqlite /tmp/final.sqlite | tee -a $R/db.log
gzip -c /tmp/final.sqlite > $R/db.sqlite.gz
python3 bench/results/shipped-db-hopper-tuned/ratio.py finddb/sm_90-132.sqlite /tmp/final.sqlite | tee $R/ratios.txt
save
cp /tmp/final.sqlite finddb/sm_90-132.sqlite
left=$(( 590 - $(el) ))
[ $left -gt 30 ] && MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout $left python3 -m pytest -q -m "gpu and not serial" -n 14 \
  -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_tf32.py tests/torch tests/core/test_tiered_gpu.py \
  tests/core/test_api_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; gzip -f $R/tests.log
save
