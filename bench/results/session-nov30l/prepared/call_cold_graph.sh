#!/usr/bin/env bash
# Prepared by session nov30l (not run: device time spent). PLAN_next item 2: under CUDA-graph trees a process keeps its
# first choices, and an Entry whose specialised kernels are not compiled runs its generic build (tiered.Switching)
# until they are: a graph recorded before then replays the generic kernels for the whole process. ResNet-50 FP32
# batch-32 training compiled at once (--compile-first) with an empty kernel cache, MIOFIND_SPECIALIZE=background (the
# default) against sync, then once more on the first process's cache (its background builds done). Generic builds
# take 1.0-1.24x the specialised ones' time (bench/results/generic-builds/).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
run() {  # tag specialize cache timeout
  MIOFIND_SPECIALIZE=$2 CUPY_CACHE_DIR=/tmp/cupy_$3 MIOFIND_KERNEL_CACHE=/tmp/kc_$3 \
    MIOFIND_DB=sqlite:////tmp/r/u_$1.sqlite timeout $4 python3 bench/bench_compile_step.py --out $R/$1 \
    --models resnet50 --configs train32-fp32 --mode reduce-overhead --iters 20 --rounds 5 --compile-first \
    > $R/$1.log 2>&1
  echo "$1 rc=$? $(el) s"; grep "^| resnet50" $R/$1/bench_compile_step.md; save
}
run cold_background background a 200
run cold_sync sync b 220
run warm_background background a 150
echo "all $(el) s"
