#!/usr/bin/env bash
# Issue 19 (call 4): call 3's GPU tests again with time to finish (call 3 stopped them at 200 s, 85% through, no
# failure), then ResNet-50 through miofind.torch against cudnn.benchmark=True with the shipped DB of call 2:
# AMP channels_last inference at batch 32 (GPU-bound: the kernels' speed shows) and training at batch 32.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/implicit_gemm_hopper tests/torch \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -2 $OUT/tests.log
timeout 200 python3 bench/bench_models.py --out $OUT/models --models resnet50 --configs infer32-amp,train32-amp \
  --skip-first --steps 0 --iters 15 --rounds 3 > $OUT/models.log 2>&1
echo "models rc=$?"; tail -12 $OUT/models.log
