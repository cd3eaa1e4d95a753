#!/usr/bin/env bash
# Session nov27b, call 5: the new GPU test of ResNeXt-101 32x8d through miofind.torch against cuDNN (grouped
# convolutions, FP32 and AMP channels_last); then ResNeXt-101 end to end in FP32 (TF32 off) training and AMP batch-1
# inference against cuDNN's benchmark mode (bench_models.py, steady steps only).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
timeout 240 python3 -m pytest -q -m gpu tests/torch/test_torch_gpu.py -k resnext101 -p no:cacheprovider > $R/test.log 2>&1
echo "test rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/test.log
tar czf $OUT/r.tgz -C $OUT r
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --models resnext101_32x8d --configs train32-fp32,infer1-amp --iters 20 \
  --rounds 3 --steps 0 --skip-first --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep resnext $R/models/bench_models.md
tar czf $OUT/r.tgz -C $OUT r
