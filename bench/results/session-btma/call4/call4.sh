#!/usr/bin/env bash
# Issue 19 (call 4), with the shipped DB of call 3 (Hopper B records at the persistent copy-engine default, ResNet-50
# N=32 B re-tuned): kernel time against every cuDNN plan on the same buffers (bench_kernel_time --tma --persist:
# ours = the shipped tuned config and the default, with the other copy-engine configs beside them), ResNet-50 N=32 B
# in FP16 and BF16; then ResNet-50 through miofind.torch against cudnn.benchmark=True (AMP channels_last, inference
# and training at batch 32); then the GPU tests the change touches (the Hopper family, miofind.torch, prepared and
# API paths).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 150 python3 bench/bench_kernel_time.py --set resnet50 --dirs B --dtypes FP16,BF16 --tma --persist --iters 30 \
  --deadline 135 --json $OUT/kt_r50.json > $OUT/kt_r50.log 2>&1
echo "r50 rc=$?"; grep -A4 "geomean" $OUT/kt_r50.log
timeout 190 python3 bench/bench_models.py --out $OUT/models --models resnet50 --configs infer32-amp,train32-amp \
  --skip-first --steps 0 --iters 15 --rounds 3 > $OUT/models.log 2>&1
echo "models rc=$?"; tail -2 $OUT/models.log | cut -c1-400
timeout 210 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/implicit_gemm_hopper tests/torch \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -2 $OUT/tests.log
