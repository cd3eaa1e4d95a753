#!/usr/bin/env bash
# Session amp, call 2: the mended tests; Inception-v3 AMP and ResNet-50 (AMP again, FP32) in-process A/B.
# (bench_models --cpp-ab: C++ path on and off in alternating rounds with cuDNN benchmark mode).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c2; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
timeout 150 python3 -m pytest -m gpu tests/torch/test_fast.py -q -p no:cacheprovider -rfEs -n 6 \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" $R/tests.log | tail -12
run() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 10 \
    --rounds 5 --cpp-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A12 "C++ hot path" $R/$2/bench_models.md | grep "^| [a-z]"
}
run 160 inc inception_v3 train32-amp
run 200 r50 resnet50 train32-amp,train32-fp32
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
