#!/usr/bin/env bash
# Session nov27b, call 7: MobileNetV3-Large end to end (depthwise 3x3 and 5x5, squeeze-excitation; its layers joined
# the shipped DB in call 6) against cuDNN's benchmark mode: AMP channels_last and FP32 (TF32 off) training at batch
# 32, steady steps and the first step of a fresh process.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
timeout 480 python3 bench/bench_models.py --models mobilenet_v3_large --configs train32-amp,train32-fp32 --iters 20 \
  --rounds 3 --steps 0 --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep mobilenet $R/models/bench_models.md
tar czf $OUT/r.tgz -C $OUT r
