#!/usr/bin/env bash
# Session amp, call 5: the host-aware choice (MIOFIND_TORCH_HOST_US). The torch GPU tests, then bench_models
# --host-ab: miofind choosing host-aware and by GPU time alone, re-chosen when the setting flips, in the same
# alternating rounds as cuDNN.
# (bench_models --cpp-ab: C++ path on and off in alternating rounds with cuDNN benchmark mode).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c5; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
run() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 10 \
    --rounds 4 --host-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A12 "host-aware choice" $R/$2/bench_models.md | grep "^| [a-z]"
}
timeout 120 python3 -m pytest -m gpu tests/torch/test_torch_gpu.py tests/torch/test_fast.py -q -p no:cacheprovider -rfE -n 6 \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" $R/tests.log | tail -8
run 170 mnet mobilenet_v2 train32-amp
run 150 r50 resnet50 train32-amp
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
