#!/usr/bin/env bash
# Session nov30h, call 3 (any sm_90): the wide guided tune of the Hopper forward solvers (as call 2: ResNet-50 FP16
# NHWC N = 32, no system DB, 400 configs, patience 100, 8 s a problem); then each budget's kept config of calls 2 and 3
# measured again side by side (budget_remeasure.py); then the tuning and API GPU tests at this code (the trace).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { gzip -kf $R/*.json 2>/dev/null; tar czf $OUT/r.tgz --exclude='*.json' -C /tmp r; }
D=bench/results/session-nov30h
export CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u3.sqlite
timeout 240 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction F \
  --tune-solver ConvImplicitGemmHopperFwd --tune-solver ConvImplicitGemmHopperFwdTmaStore --strategy guided \
  --max-configs 400 --max-seconds 8 --patience 100 --json-out $R/tune_f.json > $R/tune_f.txt 2>&1
echo "tune F rc=$? $(el) s"; tail -1 $R/tune_f.txt; save
python3 bench/tune_budget.py $R/tune_f.json --out $R/budget_f.md | tail -18
timeout 200 python3 $D/call3/budget_remeasure.py $D/call2/tune_w.json.gz $D/call2/tune_b.json.gz $R/tune_f.json \
  --json $R/remeasure.json > $R/remeasure.txt 2>&1
echo "remeasure rc=$? $(el) s"; grep "problems, re-measured" $R/remeasure.txt; save
timeout 110 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 tests/tuning tests/core/test_api_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20 | cut -c1-300; tail -1 $R/tests.log
gzip -f $R/tests.log; save; echo "all $(el) s"
