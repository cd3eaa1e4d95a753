#!/usr/bin/env bash
# Prepared by session nov30l (not run: device time spent). PLAN_next item 3: the training step under
# torch.compile(mode="default"), where Inductor's wrapper launches each op from the host (no CUDA graphs): each of
# miofind's convolutions goes through the dispatcher to its custom op's Python implementation (13.5 us on the CPU host
# before the lookup and launch, op_overhead.txt), against aten's convolution in C++. The host-aware choice applies.
# About 150 s a row on a warm machine; the first row also fills the kernel cache.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode default --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md; save
}
run r50_fp32_default resnet50 train32-fp32 200
run r50_amp_default resnet50 train32-amp 170
run mnv2_amp_default mobilenet_v2 train32-amp 170
echo "all $(el) s"
