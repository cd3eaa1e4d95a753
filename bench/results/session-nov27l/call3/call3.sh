#!/usr/bin/env bash
# Session nov27l, call 3: (1) ResNet-50's N=32 NHWC FP16/BF16 forward problems tuned once more for the Hopper F solver
# over the three-warpgroup tiles with a wider budget (--where WGS=3, 48 configs at most, patience 32; call 2: 24 and
# 12), into a copy of the shipped DB (call 2's); (2) every record of those 46 problems marked stale and measured again on
# this host (all solvers but the naive ones), cut candidates restored (call2/merge.py); own best / cuDNN by the records;
# (3) the Hopper family's GPU tests (the W kernel changed; the new tiles in F, B and W).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
H=bench/results/session-nov27l
F=ConvImplicitGemmHopperFwd
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 200 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction F --tune-solver $F --where WGS=3 --retune \
  --max-configs 48 --patience 32 --db sqlite:////tmp/db.sqlite --json-out $R/tune_Fwd.json > $R/tune_Fwd.log 2>&1
echo "tune F rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_Fwd.log | cut -c1-200; gzip -f $R/tune_Fwd.log; save
cp /tmp/db.sqlite /tmp/tuned.sqlite
SOLVERS=$(python3 $H/call3/stale_keys.py /tmp/db.sqlite $H/call3/r50_f_keys.json 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
timeout 100 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys $H/call3/r50_f_keys.json \
  --seconds 80 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-200
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"update find_records set kernel_hash = substr(kernel_hash, 7) where kernel_hash like 'stale:%'\").rowcount
db.commit(); print('cut or unmeasured, kept as before:', n)
" | tee $R/db.log
python3 $H/call2/merge.py finddb/sm_90-132.sqlite /tmp/db.sqlite /tmp/final.sqlite | tee -a $R/db.log
gzip -c /tmp/final.sqlite > $R/db.sqlite.gz
python3 bench/results/shipped-db-hopper-tuned/ratio.py finddb/sm_90-132.sqlite /tmp/tuned.sqlite /tmp/final.sqlite | tee $R/ratios.txt
save
for part in "wrw or three" "not wrw and not three"; do
  left=$(( 590 - ($(date +%s) - T0) ))
  [ $left -lt 30 ] && break
  MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout $left python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider \
    -p no:benchmark tests/implicit_gemm_hopper -k "$part" > "$R/tests_${part// /_}.log" 2>&1
  echo "tests [$part] rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 "$R/tests_${part// /_}.log")"
  grep -E "^(FAILED|ERROR)" "$R/tests_${part// /_}.log" | cut -c1-300 | head; save
done
