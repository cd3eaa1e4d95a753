#!/usr/bin/env bash
# Session nov29d, call 3 (any sm_90; here an H200; a copy of session nov29c's call4.sh after the GEMM solvers' device-bound configs): issue 19's side-by-side at the current code, same run. Every own
# solver and every cuDNN engine config timed in one benchmark-mode find per problem, on the same buffers, one process
# (bench/bench_convs.py --cudnn-harness), tuned configs from the shipped DB (empty user DB, MIOFIND_SPECIALIZE=sync):
# ResNet-50 N=32 FP16 NHWC F/B/W, tests/shapes.py's non-ResNet set FP16 NHWC F/B/W, then ResNet-50 BF16 NHWC.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite MIOFIND_SPECIALIZE=sync
for run in "FP16 resnet50 200" "FP16 nonresnet 150" "BF16 resnet50 150"; do
  set -- $run
  left=$(( 540 - $(el) )); [ $left -lt 60 ] && { echo "skip $1 $2: $left s left"; continue; }
  t=$3; [ $t -gt $left ] && t=$left
  timeout $t python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs FBW --set $2 \
    --out $R/samerun > $R/samerun_$1_$2.txt 2>&1
  echo "$1 $2 rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_$1_$2.txt; save
done
echo "all $(el) s"
left=$(( 570 - $(el) ))
if [ $left -gt 40 ]; then
  timeout $left python3 -m pytest -q -x -m "gpu and not serial" tests/gemm tests/core/test_find_modes.py -p no:cacheprovider \
    > $R/gpu_tests.txt 2>&1
  echo "gpu tests rc=$? $(el) s"; tail -3 $R/gpu_tests.txt
fi
save
