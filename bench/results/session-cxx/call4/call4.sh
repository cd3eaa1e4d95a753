#!/usr/bin/env bash
# Session cxx, call 4: the GPU tests of the solver families whose invokers now carry recipes (implicit GEMM,
# depthwise, direct) and of prepared solutions; then MobileNetV2 again, C++ path on and off in the same rounds
# (FP32 and AMP training), on this host.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c4; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
timeout 260 python3 -m pytest -m gpu tests/implicit_gemm tests/depthwise tests/direct tests/core/test_prepared_gpu.py -q \
  -p no:cacheprovider -rfEs -n 8 > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" $R/tests.log | tail -6
wait; tail -1 $R/build.log
timeout 150 python3 bench/bench_models.py --out $R/mnet --models mobilenet_v2 --configs train32-fp32,train32-amp --skip-first \
  --steps 0 --iters 10 --rounds 5 --cpp-ab > $R/mnet.log 2>&1; echo "mnet rc=$?"
grep -A12 "C++ hot path" $R/mnet/bench_models.md | grep "^| [a-z]"
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
