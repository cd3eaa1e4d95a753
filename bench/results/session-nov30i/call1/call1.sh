#!/usr/bin/env bash
# Session nov30i, call 1 (any sm_90; an H200): (1) the fast-mode test with structural checks in place of its 50 ms
# wall bound, and the rest of tests/tuning/test_tune_gpu.py; (2) a new user's trial of a model family never run through
# miofind.torch: torchvision's r3d_18 (3D convolutions), training at batch 8 in FP32 (TF32 off) and AMP
# channels_last_3d, against cuDNN's benchmark mode in the same process; shipped DB beneath an empty user DB, kernel
# cache empty at the start (the first-iteration children then find with the kernels the main process compiled).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_KERNEL_CACHE=/tmp/kc1
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 tests/tuning/test_tune_gpu.py > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; save
for cfg in train8-fp32 train8-amp; do
  MIOFIND_DB=sqlite:////tmp/r/u_$cfg.sqlite timeout 230 python3 bench/bench_models.py --out $R/r3d_$cfg --models r3d_18 \
    --configs $cfg --iters 10 --rounds 2 --warmup 3 --steps 5 > $R/r3d_$cfg.log 2>&1
  echo "r3d_18 $cfg rc=$? $(el) s"; tail -c 1500 $R/r3d_$cfg.log; save
done
echo "all $(el) s"
