#!/usr/bin/env bash
# Session check, call 3: issue 17's AMP training target on all three models in one run (Inception-v3 AMP was not
# measured in session-verify), and Inception-v3 FP32, each step captured whole in one CUDA graph and eager, cuDNN
# benchmark mode against miofind.torch in alternating rounds (bench/bench_graph_step.py; no library change since
# dcf6047).
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
timeout 300 python3 bench/bench_graph_step.py --out $R/amp --models inception_v3,mobilenet_v2,resnet50 \
  --configs train32-amp > $R/amp.log 2>&1; echo "amp rc=$?"; tail -4 $R/amp/bench_graph_step.md
timeout 150 python3 bench/bench_graph_step.py --out $R/fp32 --models inception_v3 --configs train32-fp32 \
  > $R/fp32.log 2>&1; echo "fp32 rc=$?"; tail -2 $R/fp32/bench_graph_step.md
grep -h -E "Error|error" $R/fp32.log $R/amp.log | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
