#!/usr/bin/env bash
# Session replay, call 5: what the captured cuBLASLt kernels do to a model step: bench_models --capture-ab (the traced
# recipes' matmuls as captured kernels against as cuBLASLt calls, in the same alternating rounds as cuDNN benchmark
# mode) on Inception-v3 and MobileNetV2 FP32 batch-1 inference (host-bound: the hot path), and ResNet-50 batch-1 again. (.whl slimmed as in call3.)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c5; mkdir -p $R
save() { (cd $OUT && tar czf c5.tgz c5); }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
tab() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters $5 \
    --rounds $6 --capture-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A6 "graph capture" $R/$2/bench_models.md | grep "^| [a-z]" | cut -c1-500; save
}
tab 150 inci inception_v3 infer1-fp32 15 7
tab 150 mnvi mobilenet_v2 infer1-fp32 15 7
tab 150 r50i resnet50 infer1-fp32 15 9
save; rm -rf $R
