#!/usr/bin/env bash
# Session nov30k, call 4 (any sm_90; an H200): ConvNeXt-T AMP batch 8 under torch.compile(mode="reduce-overhead") was
# 0.96x in call 3. Is it the host-aware choice (solutions the C++ path launches preferred within
# MIOFIND_TORCH_HOST_US of a faster one; under CUDA graphs host time is gone)? The same row with choices by GPU time
# alone (MIOFIND_TORCH_HOST_US=0), then with the default again, each on its own new user DB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_KERNEL_CACHE=/tmp/kc4
run() {  # tag host_us timeout
  MIOFIND_TORCH_HOST_US=$2 MIOFIND_DB=sqlite:////tmp/r/u_$1.sqlite timeout $3 python3 bench/bench_compile_step.py \
    --out $R/compile_$1 --models convnext_tiny --configs train8-amp --mode reduce-overhead --iters 20 --rounds 5 \
    > $R/compile_$1.log 2>&1
  echo "$1 rc=$? $(el) s"; grep "^| convnext" $R/compile_$1/bench_compile_step.md; save
}
run hostus0 0 240
run default 30 240
echo "all $(el) s"
