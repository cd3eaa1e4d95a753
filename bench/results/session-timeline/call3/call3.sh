#!/usr/bin/env bash
# Session timeline, call 3: step_timeline with each side in its own process (call 1 profiled cuDNN's side first in the
# same process), with Python's GC per step; then batch-1 inference, FP32 and AMP, on the three models with the
# host-aware choice against GPU time alone (bench_models --host-ab), 6 alternating rounds of 20 steps.
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
tl() {
  timeout $1 python3 bench/step_timeline.py --out $R/timeline --model $2 --config $3 > $R/tl_$2_$3.log 2>&1
  echo "timeline $2 $3 rc=$?"; grep -E "^\| (cudnn|miofind)|^(cudnn|miofind):" $R/tl_$2_$3.log | cut -c1-300
}
tl 120 mobilenet_v2 train32-fp32
tl 80 resnet50 infer1-fp32
hab() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 20 \
    --rounds 6 --host-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A4 "host-aware" $R/$2/bench_models.md | grep "^| [a-z]" | cut -c1-400
}
hab 100 r50 resnet50 infer1-fp32,infer1-amp
hab 100 mnet mobilenet_v2 infer1-fp32,infer1-amp
hab 150 inc inception_v3 infer1-fp32,infer1-amp
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
