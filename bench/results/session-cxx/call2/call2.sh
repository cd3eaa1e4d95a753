#!/usr/bin/env bash
# Session cxx, call 2: the C++ hot path's GPU tests (tests/torch/test_fast.py; test_torch_gpu.py with the default
# background build, so later tests run through it), then MobileNetV2 FP32 training against cuDNN benchmark mode,
# MIOFIND_TORCH_CPP=sync against off in alternating processes.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c2; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -2 $R/build.log
timeout 240 python3 -m pytest -m gpu tests/torch/test_fast.py tests/torch/test_torch_gpu.py -q -p no:cacheprovider -rfEs -n 6 \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" $R/tests.log | tail -8
for i in 1 2; do
  for side in sync off; do
    MIOFIND_TORCH_CPP=$side timeout 110 python3 bench/bench_models.py --out $R/$side$i --models mobilenet_v2 \
      --configs train32-fp32,infer1-fp32 --skip-first --steps 0 --iters 10 --rounds 3 > $R/$side$i.log 2>&1
    echo "$side$i rc=$?"; grep "mobilenet_v2 |" $R/$side$i/bench_models.md | cut -d'|' -f2-6
  done
done
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
