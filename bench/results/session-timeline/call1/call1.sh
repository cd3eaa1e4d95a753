#!/usr/bin/env bash
# Session timeline, call 1: where the step's wall time goes (bench/step_timeline.py) for MobileNetV2 train 32 FP32
# and ResNet-50 infer 1 FP32, both sides; then bench_models --host-ab on the FP32 rows issue 17 still misses.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c1; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
tl() {
  timeout $1 python3 bench/step_timeline.py --out $R/timeline --model $2 --config $3 > $R/tl_$2_$3.log 2>&1
  echo "timeline $2 $3 rc=$?"; grep -v "^$" $R/tl_$2_$3.log | tail -9 | cut -c1-400
}
tl 200 mobilenet_v2 train32-fp32
tl 120 resnet50 infer1-fp32
hab() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 10 \
    --rounds 4 --host-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep "^| [a-z]" $R/$2/bench_models.md | head -12
}
hab 150 r50 resnet50 infer1-fp32
hab 200 mnet mobilenet_v2 infer1-fp32,train32-fp32
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
