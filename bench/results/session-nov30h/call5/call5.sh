#!/usr/bin/env bash
# Session nov30h, call 5 (any sm_90): call 3's forward study again with one solver (call 3's two-solver tune ran past
# its limit): the Hopper forward solver tuned wide on ResNet-50's F (FP16 NHWC, N = 32, no system DB, 400 configs,
# patience 100, 8 s a problem) with its search kept; what each budget keeps (tune_budget.py) and those configs measured
# again side by side (call 3's budget_remeasure.py); then call 4's failed GPU test alone (a 50 ms bound on a fast-mode
# DB answer, 63.6 ms under 14 test workers) and the tuning GPU tests serially.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { gzip -kf $R/*.json 2>/dev/null; tar czf $OUT/r.tgz --exclude='*.json' -C /tmp r; }
D=bench/results/session-nov30h
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u5.sqlite
timeout 260 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction F \
  --tune-solver ConvImplicitGemmHopperFwd --strategy guided --max-configs 400 --max-seconds 8 --patience 100 \
  --json-out $R/tune_f.json > $R/tune_f.txt 2>&1
echo "tune F rc=$? $(el) s"; tail -1 $R/tune_f.txt; save
python3 bench/tune_budget.py $R/tune_f.json --out $R/budget_f.md | tail -10
timeout 120 python3 $D/call3/budget_remeasure.py $R/tune_f.json --json $R/remeasure_f.json > $R/remeasure_f.txt 2>&1
echo "remeasure rc=$? $(el) s"; grep "problems, re-measured" $R/remeasure_f.txt; save
timeout 60 python3 -m pytest -m gpu -p no:cacheprovider -rfEs tests/tuning > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20 | cut -c1-300; tail -1 $R/tests.log
gzip -f $R/tests.log; save; echo "all $(el) s"
