#!/usr/bin/env bash
# Prepared in session nov29e, not run (no H100 was lent). H100 ONLY: never put another GPU model's records in
# finddb/sm_90-132.sqlite. Issue 19's shipped-DB records of ConvImplicitGemmHopperFwdTmaStore (registry row 49).
# 1. Tune it over its whole space (persistent copy-engine tiles x OBUF; --max-configs and --patience as session nov29e
#    call 7, where the tuner's defaults stopped after 16-20 configs) on ResNet-50's N=32 FP16/BF16 NHWC forward
#    problems, into a copy of the shipped DB (its PerfDB entries and find records);
# 2. add its records at its find configs (tuned where step 1 tuned) to every other problem of the file it applies to
#    (415 in all, FP16/BF16 at N=1 and N=32; resumable: run the call again until "left 0");
# 3. the file comes back as $OUT/r/db.sqlite: copy it over finddb/sm_90-132.sqlite, then run
#    `python bench/results/session-nov29e/prepared/ratios.py finddb/sm_90-132.sqlite` (own best / cuDNN by the records).
# Start from the shipped file, or from the previous call's db.sqlite (DB=path) when step 2 did not finish.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
grep -q "H100" $R/device.txt || { echo "not an H100: $(cat $R/device.txt); nothing run"; exit 1; }
TS=ConvImplicitGemmHopperFwdTmaStore
cp "${DB:-finddb/sm_90-132.sqlite}" $R/db.sqlite
export MIOFIND_KERNEL_CACHE=/tmp/kcts MIOFIND_SYSTEM_DB=none
if [ -z "${DB:-}" ]; then
  timeout 330 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --dtype bf16 --layout NHWC --direction F \
    --tune-solver $TS --strategy exhaustive --max-configs 400 --patience 400 --max-seconds 30 --db sqlite:///$R/db.sqlite --json-out $R/tune.json \
    > $R/tune.txt 2>&1
  echo "tune rc=$? $(el) s"; tail -3 $R/tune.txt; save
fi
left=$(( 560 - $(el) ))
timeout $left scripts/add-solver-records $R/db.sqlite --solver $TS --keep-tuned --seconds $(( left - 40 )) \
  --json $R/add.json > $R/add.txt 2>&1
echo "add rc=$? $(el) s"; tail -3 $R/add.txt
save; echo "all $(el) s"
