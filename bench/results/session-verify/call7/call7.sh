#!/usr/bin/env bash
# Session verify, call 7 (issue 17): a training step captured whole in one CUDA graph, cuDNN benchmark mode against
# miofind.torch (bench/bench_graph_step.py, new), with the eager step of the same models in the same rounds:
# MobileNetV2 and ResNet-50, batch 32, FP32 (TF32 off) and AMP FP16 channels_last.
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
timeout 200 python3 bench/bench_graph_step.py --out $R/fp32 --models mobilenet_v2,resnet50 --configs train32-fp32 \
  > $R/fp32.log 2>&1; echo "fp32 rc=$?"; tail -4 $R/fp32/bench_graph_step.md
timeout 200 python3 bench/bench_graph_step.py --out $R/amp --models mobilenet_v2,resnet50 --configs train32-amp \
  > $R/amp.log 2>&1; echo "amp rc=$?"; tail -4 $R/amp/bench_graph_step.md
grep -h -E "Error|error" $R/fp32.log $R/amp.log | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
