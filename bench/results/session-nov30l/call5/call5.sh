#!/usr/bin/env bash
# Session nov30l, call 5 (any sm_90): the rest of the batch-1 inference rows compiled (reduce-overhead), after call 4.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode reduce-overhead --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run mnv2_infer1_fp32 mobilenet_v2 infer1-fp32 70
run inc_infer1_amp inception_v3 infer1-amp 80
run inc_infer1_fp32 inception_v3 infer1-fp32 80
echo "all $(el) s"
