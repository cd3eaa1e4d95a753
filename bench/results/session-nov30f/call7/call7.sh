#!/usr/bin/env bash
# Session nov30f, call 7 (any sm_90; the machine of call 6, still held): session nov29g's guided tune of ResNet-50's W
# (the GEMM and Hopper W solvers, 48 configs and 6 s a problem) into call 6's user DB, now over a space with the copy
# engine's 8-stage configs, then the same-run W reading it.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u6.sqlite
timeout 200 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --tune-solver GemmWrw1x1_stride1 --tune-solver ConvImplicitGemmHopperWrw --strategy guided --max-configs 48 \
  --max-seconds 6 --json-out $R/tune_guided.json > $R/tune_guided.txt 2>&1
echo "tune rc=$? $(el) s"; tail -1 $R/tune_guided.txt; save
MIOFIND_SPECIALIZE=sync timeout 150 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_tuned > $R/samerun_W_tuned.txt 2>&1
echo "samerun (tuned) rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W_tuned.txt
python3 -c "
import json; d = json.load(open('$R/tune_guided.json'))
rows = d if isinstance(d, list) else d.get('results', d.get('problems', []))
print('tuned results:', len(rows))
" 2>&1 | tail -2
save; echo "all $(el) s"
