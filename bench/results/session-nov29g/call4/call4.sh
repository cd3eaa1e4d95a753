#!/usr/bin/env bash
# Session nov29g call 4 (issue 19's W on the H200): the GPU's read bandwidth (bw_probe.py); call 1's tune of
# ResNet-50's W again (GemmWrw1x1_stride1 and the Hopper W solver, guided, 48 configs / 6 s each) into an empty user
# DB; then an exhaustive tune of the Hopper W solver's copy-engine configs (at most 300 / 45 s a layer) on the six
# memory-bound 1x1 stride-1 W layers (w1x1.txt); then the same-run W reading that DB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
D=bench/results/session-nov29g/call4
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/uw4.sqlite
timeout 60 python3 $D/bw_probe.py > $R/bw_probe.txt 2>&1; echo "bw rc=$? $(el) s"; cat $R/bw_probe.txt
timeout 150 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --tune-solver GemmWrw1x1_stride1 --tune-solver ConvImplicitGemmHopperWrw --strategy guided --max-configs 48 \
  --max-seconds 6 --json-out $R/tune_guided.json > $R/tune_guided.txt 2>&1
echo "tune guided rc=$? $(el) s"; tail -1 $R/tune_guided.txt; save
timeout 330 python3 -m miofind tune --file $D/w1x1.txt --tune-solver ConvImplicitGemmHopperWrw --strategy exhaustive \
  --where TMA=1 --max-configs 300 --max-seconds 45 --patience 300 --retune --json-out $R/tune_exh.json > $R/tune_exh.txt 2>&1
echo "tune exhaustive rc=$? $(el) s"; tail -1 $R/tune_exh.txt; save
left=$(( 585 - $(el) ))
MIOFIND_SPECIALIZE=sync timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun > $R/samerun_W.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W.txt; save; echo "all $(el) s"
