#!/usr/bin/env bash
# Session nov29g call 1: session nov29f's prepared call_next_h200.sh, with the core index-boundary file (refactored
# onto tests/boundary_helpers.py in nov29f, not run on a GPU since) added after the Hopper one. Originally:
# 1. the Hopper family's index-boundary cases that have not yet run on a GPU (the swapped-operand, TF32 and NCHW
#    members; the whole file runs, about 2 minutes with its builds, 2 workers of up to ~60 GB), then its negative
#    control (prepared/negative_control.py: five n = 513 cases rebuilt with 32-bit offsets, which it must catch);
# 2. issue 19's W on this GPU after a user's own tuning: `miofind tune` of the cuBLASLt 1x1 GEMM (GemmWrw1x1_stride1)
#    and the Hopper W solver on ResNet-50's N=32 FP16 NHWC W problems into an empty user DB (guided, at most 48
#    configs and 6 s per solver and problem), then the same-run side-by-side of W reading that DB. Session nov29d's
#    same-run W at the find configs: FP16 0.908, BF16 0.901; its sweep: GemmWrw1x1 at its best config 0.984 of
#    cuDNN's best plan on the nine 1x1 layers, 1.002 at its default.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc
MIOFIND_BIG_TESTS=1 MIOFIND_DB=sqlite:////tmp/ub.sqlite timeout 200 python3 -m pytest -m gpu \
  tests/implicit_gemm_hopper/test_index_boundaries.py -v -p no:cacheprovider -rfEs -n 2 --durations=10 > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries.log | head; tail -1 $R/boundaries.log; save
MIOFIND_BIG_TESTS=1 MIOFIND_DB=sqlite:////tmp/ub.sqlite timeout 120 python3 -m pytest -m gpu \
  tests/core/test_index_boundaries_gpu.py -v -p no:cacheprovider -rfEs -n 1 --durations=5 > $R/boundaries_core.log 2>&1
echo "core boundaries rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/boundaries_core.log | head; tail -1 $R/boundaries_core.log
save
# the negative control: n = 513 cases rebuilt with 32-bit offsets, which the test must catch (exit 0 = caught)
for v in "F cp.async" "F default" "B cp.async" "W cp.async" "Fnchw default"; do
  MIOFIND_DB=sqlite:////tmp/ub.sqlite timeout 60 python3 bench/results/session-nov29f/prepared/negative_control.py $v \
    >> $R/negative_control.jsonl 2>> $R/negative_control.err; echo "negative control $v rc=$?"
done
save
export MIOFIND_DB=sqlite:////tmp/uw.sqlite
timeout 240 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --tune-solver GemmWrw1x1_stride1 --tune-solver ConvImplicitGemmHopperWrw --strategy guided --max-configs 48 \
  --max-seconds 6 --json-out $R/tune.json > $R/tune.txt 2>&1
echo "tune rc=$? $(el) s"; tail -3 $R/tune.txt; save
left=$(( 570 - $(el) ))
MIOFIND_SPECIALIZE=sync timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun > $R/samerun_W.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W.txt; save; echo "all $(el) s"
