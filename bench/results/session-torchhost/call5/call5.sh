#!/usr/bin/env bash
# Call 5: the GPU tests of what session-torchhost's launch change touches (the Hopper family with its tensor maps,
# prepared solutions incl. CUDA-graph capture, the native launcher); then where Inception-v3's and MobileNetV2's
# AMP training steps spend their host time (bench_torch_host --model).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c5; mkdir -p $R
timeout 300 python3 -m pytest -m gpu tests/implicit_gemm_hopper tests/core/test_prepared_gpu.py tests/core/test_native.py \
  -q -p no:cacheprovider -rfEs -n 8 > $R/tests.log 2>&1; echo "tests rc=$?"; tail -3 $R/tests.log
for m in inception_v3 mobilenet_v2; do
  timeout 130 python3 bench/bench_torch_host.py --out $R/host-$m --model $m --model-configs train32-amp --steps 15 \
    > $R/host-$m.log 2>&1; echo "$m rc=$?"
  grep -A25 "^## " $R/host-$m/bench_torch_host.md | head -28
done
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
