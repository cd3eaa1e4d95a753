#!/usr/bin/env bash
# Session amp, call 4: the Hopper family's GPU tests (its invokers now declare recipes), then in-process A/B of the
# AMP inference rows (the Hopper forward now launches from C++) and MobileNetV2 AMP training once more.
# (bench_models --cpp-ab: C++ path on and off in alternating rounds with cuDNN benchmark mode).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c4; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
run() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 10 \
    --rounds 5 --cpp-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A12 "C++ hot path" $R/$2/bench_models.md | grep "^| [a-z]"
}
timeout 230 python3 -m pytest -m gpu tests/implicit_gemm_hopper -q -p no:cacheprovider -rfE -n 8 > $R/hopper.log 2>&1
echo "hopper tests rc=$?"; grep -E "passed|failed|^FAILED|^ERROR" $R/hopper.log | tail -8
run 130 r50 resnet50 infer1-amp,infer32-amp
run 130 mnet mobilenet_v2 train32-amp
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
