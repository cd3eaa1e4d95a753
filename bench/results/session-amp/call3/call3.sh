#!/usr/bin/env bash
# Session amp, call 3: MobileNetV2 train 32 FP32 and AMP in-process A/B with --profile (GPU busy and host queue per
# step), then bench_torch_host's per-part host time of its FP32 step with the C++ path.
# (bench_models --cpp-ab: C++ path on and off in alternating rounds with cuDNN benchmark mode).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c3; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
run() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 10 \
    --rounds 5 --cpp-ab --profile > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A12 "C++ hot path" $R/$2/bench_models.md | grep "^| [a-z]"
}
run 280 mnet mobilenet_v2 train32-fp32,train32-amp
timeout 150 python3 bench/bench_torch_host.py --out $R/host --model mobilenet_v2 --model-configs train32-fp32 --skip-layers \
  > $R/host.log 2>&1; echo "host rc=$?"; tail -3 $R/host.log | cut -c1-600
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
