#!/usr/bin/env bash
# Session nov30h, call 2 (any sm_90): wide guided tunes of the Hopper W and B solvers on ResNet-50 (FP16 NHWC, N = 32,
# no system DB: a model the shipped DB does not hold), 400 configs, patience 100, 15 s (W) / 10 s (B) a problem, each
# solver's search kept in --json-out (trace, checks) for bench/tune_budget.py: what the default budget (16 configs,
# patience 8) and others between would have kept, on one machine (session nov30g's PLAN_next item 3).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { gzip -kf $R/*.json 2>/dev/null; tar czf $OUT/r.tgz --exclude='*.json' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u2.sqlite
timeout 300 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --tune-solver ConvImplicitGemmHopperWrw --strategy guided --max-configs 400 --max-seconds 15 --patience 100 \
  --json-out $R/tune_w.json > $R/tune_w.txt 2>&1
echo "tune W rc=$? $(el) s"; tail -1 $R/tune_w.txt; save
python3 bench/tune_budget.py $R/tune_w.json --out $R/budget_w.md | tail -12
timeout 240 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction B \
  --tune-solver ConvImplicitGemmHopperBwd --strategy guided --max-configs 400 --max-seconds 10 --patience 100 \
  --json-out $R/tune_b.json > $R/tune_b.txt 2>&1
echo "tune B rc=$? $(el) s"; tail -1 $R/tune_b.txt; save
python3 bench/tune_budget.py $R/tune_b.json --out $R/budget_b.md | tail -12
save; echo "all $(el) s"
