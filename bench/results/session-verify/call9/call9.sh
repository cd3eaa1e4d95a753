#!/usr/bin/env bash
# Session verify, call 9 (issue 17): batch-1 inference captured whole in one CUDA graph (bench/bench_graph_step.py's
# inference configurations: the forward without autograd), cuDNN benchmark mode against miofind.torch, with the eager
# forward in the same rounds: ResNet-50, MobileNetV2, Inception-v3, FP32 (TF32 off) and AMP FP16 channels_last.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 150 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1; tail -1 $R/warmup.log
for c in infer1-fp32 infer1-amp; do
  timeout 150 python3 bench/bench_graph_step.py --out $R/$c --models resnet50,mobilenet_v2,inception_v3 --configs $c \
    > $R/$c.log 2>&1; echo "$c rc=$?"; tail -3 $R/$c/bench_graph_step.md
done
grep -h -E "Error|error" $R/infer1-*.log | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
